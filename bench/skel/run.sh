#!/usr/bin/env bash
# bench/skel: futures and skeletons (the Lithium paper's experiments).
#   1. Figures 8-9 again: the image pipeline (examples/skel/images.lua, 30
#      pictures 640x480, blur then oil) sequential, plain and optimised, on
#      1 node, on 2 nodes, and with the computing node behind a link of
#      20 ms each way (delay_proxy.py; the caller's node only coordinates,
#      as the paper's client did). Medians of interleaved runs.
#   2. Figures 11-12 again: load balancing (balance.lua) over two nodes
#      pinned to a core each, one of them loaded from outside for a while;
#      a table and a picture (balance.svg).
#   3. Task overhead against Ray and Dask (overhead.lua, overhead.py): empty
#      tasks in bulk, a single round trip, a 1 MB two-stage chain. Ray and
#      Dask are pip-installed into target/bench-venv (skipped if that fails,
#      and in --quick mode unless already there).
# --quick: small pictures and few runs (the CI smoke); no assertion on time.
# usage: bench/skel/run.sh [--quick] [--repeat R]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
repeat=3
count=30 width=640 height=480
balance_seconds=9 hog_at=3 hog_for=3
tasks=20000
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; repeat=1; count=6; width=160; height=120; balance_seconds=3; hog_at=1; hog_for=1; tasks=2000 ;;
    --repeat) repeat="$2"; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3) || { echo "run.sh: python3 not found (apt-get install python3)" >&2; exit 1; }
need "apt-get install gcc util-linux" cc taskset
prepare
pids=()
bench_cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
cc -O2 -shared -fPIC -I "$root/vendor/lua-5.4.8" -I "$root/include" "$root/examples/skel/filters.c" -o "$work/filters.so"
export LUA_CPATH_5_4="$work/?.so;;"
printf 'bench cookie for synodic skeletons\n' > "$work/cookie"
chmod 600 "$work/cookie"
cookie=(--cookie-file "$work/cookie")
port=$(port_base)

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
seconds() { grep -o '[0-9.]* s, checksum' | awk '{print $1}'; }

# A node in the background, pinned to `cpus` if given, that ends with the
# script; waits until it listens.
start_node() {
  local cpus=$1 log=$2
  shift 2
  if [ -n "$cpus" ]; then taskset -c "$cpus" "$synodic" node "${cookie[@]}" "$@" 2> "$log" &
  else "$synodic" node "${cookie[@]}" "$@" 2> "$log" &
  fi
  pids+=($!)
  wait_until 30 "the node of $log listening" grep -q "listening on" "$log"
}

# 1. The image pipeline.
images=("$root/examples/skel/images.lua" "$count" "$width" "$height")
slow_link() {
  local a=$port b=$((port + 1)) pa=$((port + 2)) pb=$((port + 3))
  "$python" "$here/delay_proxy.py" "$pa" "$a" 20 & pids+=($!)
  "$python" "$here/delay_proxy.py" "$pb" "$b" 20 & pids+=($!)
  sleep 0.5
  start_node "" "$work/b.log" --listen "127.0.0.1:$b" --advertise "127.0.0.1:$pb" --name "slowb$$"
  "$synodic" run "${cookie[@]}" --listen "127.0.0.1:$a" --advertise "127.0.0.1:$pa" --join "127.0.0.1:$pb" --name "slowa$$" "${images[@]}" "$1" remote 2>/dev/null
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
declare -A t
# Each configuration's runs one after the other (a run after another that
# moved much data finds colder memory on this kind of VM).
for _ in $(seq "$repeat"); do
  t[sequential]+="$("$synodic" run "${images[@]}" sequential | seconds) "
  for mode in plain optimised; do t[one_$mode]+="$("$synodic" run "${images[@]}" "$mode" | seconds) "; done
  for mode in plain optimised; do t[two_$mode]+="$("$synodic" run --nodes 2 "${cookie[@]}" "${images[@]}" "$mode" 2>/dev/null | seconds) "; done
  for mode in plain optimised; do t[slow_$mode]+="$(slow_link "$mode" | seconds) "; done
done
med() { echo "${t[$1]}" | tr ' ' '\n' | grep . | median; }
seq_s=$(med sequential)
echo "### Figures 8-9: $count pictures ${width}x$height, blur then oil (medians of $repeat)"
echo
echo "| configuration | sequential s | plain s | optimised s | optimised speedup over sequential | optimised ÷ plain time | goal |"
echo "|---|---|---|---|---|---|---|"
for c in one two slow; do
  case $c in
    one) label="1 node (2 workers)"; goal="speedup ≥ 1.9" ;;
    two) label="2 nodes" ; goal="" ;;
    slow) label="2 nodes, 20 ms each way, the caller's node coordinating" ; goal="plain ≥ 2× optimised" ;;
  esac
  p=$(med "${c}_plain") o=$(med "${c}_optimised")
  echo "| $label | $seq_s | $p | $o | $(ratio "$seq_s" "$o") | $(ratio "$o" "$p") | $goal |"
done
echo

# 2. Load balancing.
start_node 0 "$work/lb1.log" --workers 1 --listen "127.0.0.1:$((port + 10))" --name "lbfirst$$"
start_node 1 "$work/lb2.log" --workers 1 --listen "127.0.0.1:$((port + 11))" --join "127.0.0.1:$((port + 10))" --name "lbsecond$$"
svg="$here/balance.svg"
[ "$quick" = 1 ] && svg="$work/balance.svg"
echo "### Figures 11-12: load balancing, second node loaded from outside from ${hog_at} s to $((hog_at + hog_for)) s"
echo
"$synodic" run --workers 1 "${cookie[@]}" --join "127.0.0.1:$((port + 10))" "$here/balance.lua" "lbfirst$$" "lbsecond$$" "$hog_at" "$hog_for" "$balance_seconds" "$svg" 2>/dev/null
echo
echo "(history drawn in $svg)"
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
pids=()
echo

# 3. Task overhead against Ray and Dask.
venv="$root/target/bench-venv"
if [ ! -x "$venv/bin/python" ] && [ "$quick" = 0 ]; then
  ("$python" -m venv "$venv" && "$venv/bin/pip" install -q ray dask distributed) >/dev/null 2>&1 || echo "(Ray and Dask could not be installed: their rows are empty)"
fi
field() { echo "$1" | grep -o "$2=[0-9.]*" | cut -d= -f2; }
declare -A o
for _ in $(seq "$repeat"); do
  o[here]+="$("$synodic" run "$here/overhead.lua" "$tasks" here)"$'\n'
  o[there]+="$("$synodic" run --nodes 2 "${cookie[@]}" "$here/overhead.lua" "$tasks" there 2>/dev/null)"$'\n'
  for py in ray dask; do
    if [ -x "$venv/bin/python" ]; then
      o[$py]+="$(timeout 300 "$venv/bin/python" "$here/overhead.py" "$py" "$tasks" 2>/dev/null | tail -1)"$'\n'
    fi
  done
done
omed() { echo "${o[$1]:-}" | grep -o "$2=[0-9.]*" | cut -d= -f2 | median; }
echo "### Task overhead ($tasks empty tasks; medians of $repeat)"
echo
echo "| system | empty task in bulk, µs | single round trip, µs | 1 MB two-stage chain, ms |"
echo "|---|---|---|---|"
for who in here there ray dask; do
  case $who in
    here) label="Synodic, one node (goals 5 µs, 20 µs)" ;;
    there) label="Synodic, across two nodes (goals 50 µs, -, 1 ms)" ;;
    ray) label="Ray (2 CPUs)" ;;
    dask) label="Dask (2 worker processes)" ;;
  esac
  echo "| $label | $(omed "$who" empty_us) | $(omed "$who" roundtrip_us) | $(omed "$who" chain_ms) |"
done
