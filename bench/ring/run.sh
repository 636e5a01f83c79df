#!/usr/bin/env bash
# bench/ring: Synodic against Erlang, side by side in one run.
#   ring:  N processes in a ring pass a token M=100 times around
#          (creation time, ns per send, whole run, peak RSS, RSS growth
#          per process);
#   ring, require variant: the same ring, each member doing
#          `local s = require "synodic"` itself (examples/ring.lua ... require);
#   spawn: N processes that each send one message back and end.
# Prints a markdown table with Synodic ÷ Erlang for each figure (lower is
# better for all of them): medians of --repeat runs (one run for N >= 1M).
# KB/process is the peak RSS growth over a 2-process ring, divided by N.
# --quick runs N <= 10k only (the CI smoke).
# usage: bench/ring/run.sh [--quick] [--sizes "1000 10000 ..."] [--repeat R]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
sizes="1000 10000 100000 1000000 2000000"
repeat=5
M=100
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) sizes="1000 10000"; repeat=1 ;;
    --sizes) sizes="$2"; shift ;;
    --repeat) repeat="$2"; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
need "apt-get install erlang-base time" erl erlc /usr/bin/time
prepare
erlc -o "$work" "$here/ring.erl" "$here/spawn.erl"

# run NAME CMD...: runs CMD under /usr/bin/time; prints "<program output> rss_kb=<peak>"
measure() {
  local out
  out=$(/usr/bin/time -f "rss_kb=%M" "$@" 2>"$work/time" | tail -1)
  echo "$out $(grep -o 'rss_kb=[0-9]*' "$work/time")"
}
field() { echo "$1" | grep -o "$2=[0-9.]*" | cut -d= -f2; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

syn_ring() { measure "$synodic" run "$root/examples/ring.lua" "$1" "$M"; }
syn_req() { measure "$synodic" run "$root/examples/ring.lua" "$1" "$M" require; }
erl_ring() { measure erl +P 4000000 -noshell -pa "$work" -run ring main "$1" "$M"; }
syn_spawn() { measure "$synodic" run "$here/spawn.lua" "$1"; }
erl_spawn() { measure erl +P 4000000 -noshell -pa "$work" -run spawn main "$1"; }

base_syn=$(field "$(syn_ring 2)" rss_kb)
base_erl=$(field "$(erl_ring 2)" rss_kb)

runs_for() { if [ "$1" -ge 1000000 ]; then echo 1; else echo "$repeat"; fi; }
# whole LINE: seconds for the whole run (building the ring, then N*M sends).
whole() { awk -v c="$(field "$1" create)" -v s="$(field "$1" ns_per_send)" -v n="$2" -v m="$M" \
  'BEGIN { if (c == "" || s == "") print ""; else printf "%.3f\n", c + s * n * m / 1e9 }'; }

# ring_table TITLE SYNODIC_FN MAX_N: one row per size, Synodic (SYNODIC_FN)
# against Erlang's ring.
ring_table() {
  echo "| $1: N | Synodic create s | Erlang create s | ratio | Synodic ns/send | Erlang ns/send | ratio | Synodic whole run s | Erlang whole run s | ratio | Synodic peak RSS MB | Erlang peak RSS MB | Synodic KB/process | Erlang KB/process | ratio |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for n in $sizes; do
    [ "$n" -le "$3" ] || continue
    for sys in syn erl; do : > "$work/$sys.create"; : > "$work/$sys.send"; : > "$work/$sys.whole"; : > "$work/$sys.rss"; done
    # Interleaved (Synodic, Erlang, Synodic, ...): a drift in the machine's
    # speed during the run then touches both sides alike.
    for _ in $(seq "$(runs_for "$n")"); do
      for sys in syn erl; do
        if [ $sys = syn ]; then line=$($2 "$n" || echo "failed"); else line=$(erl_ring "$n" || echo "failed"); fi
        field "$line" create >> "$work/$sys.create"
        field "$line" ns_per_send >> "$work/$sys.send"
        whole "$line" "$n" >> "$work/$sys.whole"
        field "$line" rss_kb >> "$work/$sys.rss"
      done
    done
    sc=$(median < "$work/syn.create"); ec=$(median < "$work/erl.create")
    ss=$(median < "$work/syn.send"); es=$(median < "$work/erl.send")
    sw=$(median < "$work/syn.whole"); ew=$(median < "$work/erl.whole")
    sr=$(median < "$work/syn.rss"); er=$(median < "$work/erl.rss")
    skb=$(awk -v r="$sr" -v b="$base_syn" -v n="$n" 'BEGIN { printf "%.2f", (r - b) / n }')
    ekb=$(awk -v r="$er" -v b="$base_erl" -v n="$n" 'BEGIN { printf "%.2f", (r - b) / n }')
    echo "| $n | $sc | $ec | $(ratio "$sc" "$ec") | $ss | $es | $(ratio "$ss" "$es") | $sw | $ew | $(ratio "$sw" "$ew") | $((sr / 1024)) | $((er / 1024)) | $skb | $ekb | $(ratio "$skb" "$ekb") |"
  done
}

ring_table "ring" syn_ring 100000000
echo
ring_table "ring, members require synodic" syn_req 1000000

echo
echo "| spawn-and-exit N | Synodic µs/process | Erlang µs/process | ratio |"
echo "|---|---|---|---|"
for n in $sizes; do
  [ "$n" -le 1000000 ] || continue
  : > "$work/syn.sp"; : > "$work/erl.sp"
  for _ in $(seq "$(runs_for "$n")"); do
    field "$(syn_spawn "$n")" us_per_process >> "$work/syn.sp"
    field "$(erl_spawn "$n")" us_per_process >> "$work/erl.sp"
  done
  a=$(median < "$work/syn.sp"); b=$(median < "$work/erl.sp")
  echo "| $n | $a | $b | $(ratio "$a" "$b") |"
done
