#!/usr/bin/env bash
# bench/dashboard: what the dashboard costs a running program, and how fast
# it answers over many processes. Prints markdown tables of medians:
#   overhead   the ring (examples/ring.lua, ns per send) and the skeleton
#              image pipeline (examples/skel/images.lua on 2 nodes, s) with
#              no dashboard, with --dashboard and no page open, and with a
#              page open (watch.py: the live stream, and the processes and
#              spaces views fetched every second); goals ≤ 1% and ≤ 5%
#              slower than without. Runs interleaved, each round in
#              another order (none, unwatched, watched; then unwatched,
#              watched, none; ...) so that a drift of the machine, and the
#              second of two runs in a row being slower, touch all three
#              alike. The goal's statistic is the median over rounds of
#              each round's own ratio (a round's three runs are seconds
#              apart, so the machine's slower and faster spells, which
#              move single runs by ±10%, cancel within it); the ratio of
#              the medians is printed beside it.
#   refresh    one refresh of the heaviest view (the top 50 processes, the
#              nodes, the spaces) with 100,000 processes over 3 nodes; goal
#              ≤ 1 s.
# --quick: few runs, small sizes (the CI smoke).
# usage: bench/dashboard/run.sh [--quick] [--repeat R]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
repeat=15
ring_n=10000
ring_m=1000
images=(24 512 512)
many=100000
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) repeat=1; ring_n=1000; ring_m=50; images=(4 64 64); many=3000 ;;
    --repeat) repeat="$2"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
need "apt-get install python3 gcc" python3 cc
prepare
cc -O2 -shared -fPIC -I "$root/vendor/lua-5.4.8" -I "$root/include" "$root/examples/skel/filters.c" -o "$work/filters.so"
export LUA_CPATH_5_4="$work/?.so;;"
head -c 24 /dev/urandom | base64 > "$work/cookie"
chmod 600 "$work/cookie"
watcher=""
bench_cleanup() { [ -z "$watcher" ] || kill "$watcher" 2>/dev/null || true; }

field() { echo "$1" | grep -o "$2=[0-9.]*" | head -1 | cut -d= -f2; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }

# dashboard_url PID ERR: the URL the run PID announced on its standard error
# (the file ERR) as its dashboard came up. Each run's dashboard listens on a
# port the system picks (127.0.0.1:0), so no port chosen here can be taken.
dashboard_url() {
  local url=""
  until url=$(grep -o 'dashboard on http://[0-9.:]*/' "$2" 2>/dev/null | head -1 | cut -d' ' -f3) && [ -n "$url" ]; do
    kill -0 "$1" 2>/dev/null || { echo "run.sh: the run ended before its dashboard came up: $(cat "$2")" >&2; return 1; }
    sleep 0.05
  done
  echo "$url"
}

# once WHAT MODE: one run of the ring or the pipeline with no dashboard
# (none), a dashboard nobody watches (unwatched) or a page open (watched);
# prints its figure.
once() {
  local what=$1 mode=$2 flags=() run url
  [ "$mode" = none ] || flags=(--dashboard 127.0.0.1:0)
  if [ "$what" = ring ]; then
    "$synodic" run "${flags[@]}" "$root/examples/ring.lua" "$ring_n" "$ring_m" > "$work/once.out" 2> "$work/once.err" &
  else
    "$synodic" run --nodes 2 --cookie-file "$work/cookie" "${flags[@]}" "$root/examples/skel/images.lua" "${images[@]}" optimised > "$work/once.out" 2> "$work/once.err" &
  fi
  run=$!
  if [ "$mode" = watched ]; then
    url=$(dashboard_url "$run" "$work/once.err") || exit 1
    python3 "$here/watch.py" watch "$url" & watcher=$!
  fi
  wait "$run" || { echo "run.sh: $what ($mode) failed: $(cat "$work/once.err")" >&2; exit 1; }
  if [ -n "$watcher" ]; then kill "$watcher" 2>/dev/null || true; wait "$watcher" 2>/dev/null || true; watcher=""; fi
  if [ "$what" = ring ]; then
    field "$(cat "$work/once.out")" ns_per_send
  else
    grep -o '[0-9.]* s' "$work/once.out" | head -1 | cut -d' ' -f1
  fi
}

declare -A got
modes=(none unwatched watched)
for round in $(seq 0 $((repeat - 1))); do
  for what in ring pipeline; do
    declare -A this=()
    for k in 0 1 2; do
      mode=${modes[$(( (round + k) % 3 ))]}
      this[$mode]=$(once $what $mode)
      got[$what.$mode]+="${this[$mode]} "
    done
    # This round's own ratios, to the run without a dashboard.
    got[$what.unwatched.ratio]+="$(ratio "${this[unwatched]}" "${this[none]}") "
    got[$what.watched.ratio]+="$(ratio "${this[watched]}" "${this[none]}") "
  done
done
med() { echo "${got[$1]}" | tr ' ' '\n' | grep . | median; }
spread() { echo "${got[$1]}" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {printf "%s–%s", a[1], a[NR]}'; }

echo "### What the dashboard costs ($repeat rounds, interleaved, each in another order)"
echo
echo "Figures: medians of the $repeat runs. Ratios: the median of the rounds' own ratios (their range), then the ratio of the medians."
echo
echo "| program | no dashboard | --dashboard, no page | ratio | page open | ratio | goal |"
echo "|---|---|---|---|---|---|---|"
for what in ring pipeline; do
  unit="ns/send"; [ $what = ring ] || unit="s"
  label="ring N=$ring_n M=$ring_m, $unit"; [ $what = ring ] || label="image pipeline ${images[*]} on 2 nodes, $unit"
  n=$(med $what.none); u=$(med $what.unwatched); w=$(med $what.watched)
  echo "| $label | $n | $u | **$(med $what.unwatched.ratio)** ($(spread $what.unwatched.ratio)); $(ratio "$u" "$n") | $w | **$(med $what.watched.ratio)** ($(spread $what.watched.ratio)); $(ratio "$w" "$n") | ≤ 1.01, ≤ 1.05 |"
done

# The refresh over many processes.
"$synodic" run --nodes 3 --cookie-file "$work/cookie" --dashboard 127.0.0.1:0 "$here/many.lua" "$many" 600 > "$work/many.out" 2>"$work/many.err" &
run=$!
until grep -q ready "$work/many.out" 2>/dev/null; do
  kill -0 "$run" 2>/dev/null || { echo "run.sh: many.lua ended: $(cat "$work/many.err")" >&2; exit 1; }
  sleep 0.1
done
line=$(python3 "$here/watch.py" refresh "$(dashboard_url "$run" "$work/many.err")" 5) || { echo "run.sh: the refresh failed: $(cat "$work/many.err")" >&2; exit 1; }
kill "$run" 2>/dev/null || true
wait "$run" 2>/dev/null || true
echo
echo "| refresh of the processes view, $many processes over 3 nodes | median s | max s | goal |"
echo "|---|---|---|---|"
echo "| top 50 by processor time, the nodes, the spaces | $(field "$line" refresh_s) | $(field "$line" refresh_max_s) | ≤ 1 s |"
