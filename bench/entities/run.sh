#!/usr/bin/env bash
# bench/entities: the VEOS paper's primitives table re-run — fork, join,
# sync call round trip, async send+reply round trip, local and remote (two
# nodes) — for Synodic's entities and, in the same run, Erlang's
# gen_server on two `erl -sname` nodes; then Bounce's four placements in
# frames per second; and what fresh memory costs this machine
# (fresh_memory.c). Prints markdown tables with the paper's figures and
# the ratios. Both systems run `repeat` times (default 3), interleaved, and
# each figure is the median of the runs: a run on this shared machine can
# land in a period when fresh memory is slow for its whole length.
# --quick is the CI smoke (small counts, one run).
# usage: bench/entities/run.sh [--quick] [--repeat R]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
n=20000
frames=1000
repeat=3
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) n=500; frames=100; repeat=1 ;;
    --repeat) repeat=${2:?--repeat needs a count}; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
need "apt-get install erlang-base" erl erlc epmd
prepare
host=$(hostname)
bench_cleanup() { pkill -f "sname ent_peer_$$" 2>/dev/null || true; }
erlc -o "$work" "$here/entities.erl"
head -c 24 /dev/urandom | base64 > "$work/cookie"
chmod 600 "$work/cookie"
epmd -daemon

syn=""; erl=""
for _ in $(seq "$repeat"); do
  syn="$syn $("$synodic" run --nodes 2 --cookie-file "$work/cookie" "$here/entities.lua" "$n" | tr '\n' ' ')"
  erl -sname "ent_peer_$$" -setcookie bench -noshell -pa "$work" >/dev/null 2>&1 &
  peer=$!
  wait_until 30 "Erlang's peer node registered" epmd_has "ent_peer_$$"
  erl="$erl $(erl -sname "ent_main_$$" -setcookie bench -noshell -pa "$work" -run entities main "ent_peer_$$@$host" "$n" | tr '\n' ' ')"
  # The next run (of either system) has the processors to itself.
  await_exit "$peer"
  while epmd -names 2>/dev/null | grep -q "ent_peer_$$"; do sleep 0.05; done
done

# The median over the runs of figure `$2` in the lines `$1`.
field() { echo "$1" | grep -o "$2=[0-9.]*" | cut -d= -f2 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
paper() { case "$1" in
  fork_local) echo 10.6 ;; join_local) echo 1.4 ;; sync_local) echo 2.0 ;; async_local) echo 7.2 ;;
  fork_remote) echo 28.0 ;; join_remote) echo 1.2 ;; sync_remote) echo 8.6 ;; async_remote) echo 14.5 ;;
esac; }

echo "| primitive | where | VEOS 1992, ms | Synodic, µs | Erlang, µs | Synodic ÷ Erlang | goal |"
echo "|---|---|---|---|---|---|---|"
for where in local remote; do
  goal=$([ "$where" = local ] && echo "≤ 1.0" || echo "≤ 0.5")
  for op in fork join sync async; do
    s=$(field "$syn" "${op}_${where}_us"); e=$(field "$erl" "${op}_${where}_us")
    echo "| $op | $where | $(paper "${op}_${where}") | $s | $e | $(ratio "$s" "$e") | $goal |"
  done
done

# What fresh memory costs this machine now: a floor under the fork lines.
if cc -O2 -o "$work/fresh_memory" "$here/fresh_memory.c" 2>/dev/null; then
  echo
  "$work/fresh_memory"
fi

echo
echo "| placement | VEOS 1992, frames/s | Synodic, frames/s ($frames frames) |"
echo "|---|---|---|"
for p in "sequential 1 .54" "distributed 2 1.21" "wholesale 2 1.17" "parallel 3 .97"; do
  read -r placement nodes theirs <<< "$p"
  runs=""
  for _ in $(seq "$repeat"); do
    line=$("$synodic" run --nodes "$nodes" --cookie-file "$work/cookie" "$root/examples/entities/bounce.lua" "$frames" "$placement" "$work/bounce.html" | tail -1)
    runs="$runs fps=$(echo "$line" | sed -E 's/.*, ([0-9.]+) frames\/s.*/\1/')"
  done
  fps=$(field "$runs" fps)
  echo "| $placement | $theirs | $fps |"
done
