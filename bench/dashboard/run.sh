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
#   counted    the same programs under valgrind (every node): the
#              instructions of a whole run with no dashboard, with one
#              nobody watches, and with a page open, and the context
#              switches of the timed runs. Instructions do not drift with
#              the machine as time does (the timed rounds spread ±10-30% on
#              a VM, wider than a 1% goal). Under valgrind a program runs
#              ~20-40 times slower while a page still refreshes once a
#              second, so a page's cost is taken as instructions a second
#              of page open, against the program's instructions a second
#              at full speed (the same run, timed without valgrind).
#   refresh    one refresh of the heaviest view (the top 50 processes, the
#              nodes, the spaces) with 100,000 processes over 3 nodes; goal
#              ≤ 1 s.
# --quick: few runs, small sizes (the CI smoke). --no-count: skip the
# counted table; --repeat 0: only the counted table and the refresh.
# usage: bench/dashboard/run.sh [--quick] [--repeat R] [--no-count]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
repeat=15
ring_n=10000
ring_m=1000
images=(24 512 512)
many=100000
counted=3     # runs of each configuration under valgrind (0: none)
count_m=100   # the ring's laps when counted (N=ring_n)
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) repeat=1; ring_n=1000; ring_m=50; images=(4 64 64); many=3000; counted=1; count_m=20 ;;
    --repeat) repeat="$2"; shift ;;
    --no-count) counted=0 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
need "apt-get install python3 gcc time" python3 cc /usr/bin/time
[ "$counted" = 0 ] || need "apt-get install valgrind, or run with --no-count" valgrind
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

# program WHAT LAPS: sets `args` to what `synodic run` takes after the
# dashboard's flag for the ring (LAPS times round) or the pipeline (2 nodes).
program() {
  if [ "$1" = ring ]; then
    args=("$root/examples/ring.lua" "$ring_n" "$2")
  else
    args=(--nodes 2 --cookie-file "$work/cookie" "$root/examples/skel/images.lua" "${images[@]}" optimised)
  fi
}

# ready_page: starts the page (watch.py watch, its address to come on its
# standard input) and waits until Python has started, so that its start
# costs the run to come nothing; sets `watcher` and `page_in`.
ready_page() {
  local said
  mkfifo "$work/page.in" "$work/page.out"
  python3 "$here/watch.py" watch - < "$work/page.in" > "$work/page.out" & watcher=$!
  exec {page_in}> "$work/page.in"
  read -r said < "$work/page.out"
  rm -f "$work/page.in" "$work/page.out"
  [ "$said" = waiting ] || { echo "run.sh: watch.py did not start: $said" >&2; exit 1; }
}

# watch_page RUN ERR: tells the page started by `ready_page` the address
# of the dashboard of the run RUN, whose standard error is the file ERR.
watch_page() {
  local url
  url=$(dashboard_url "$1" "$2") || exit 1
  echo "$url" >&"$page_in"
  exec {page_in}>&-
}

# stop_watching: closes the page, if one is open.
stop_watching() {
  if [ -n "$watcher" ]; then kill "$watcher" 2>/dev/null || true; wait "$watcher" 2>/dev/null || true; watcher=""; fi
}

# launch WHAT MODE LAPS NAME COMMAND...: one run of the ring (LAPS times
# round) or the pipeline with no dashboard (none), a dashboard nobody
# watches (unwatched) or a page open (watched), under COMMAND (GNU time,
# valgrind; none: as it is), its output in $work/NAME.out and NAME.err.
# A run that fails stops the benchmark with its error.
launch() {
  local what=$1 mode=$2 laps=$3 name=$4 flags=() run args
  shift 4
  [ "$mode" = none ] || flags=(--dashboard 127.0.0.1:0)
  program "$what" "$laps"
  [ "$mode" != watched ] || ready_page
  "$@" "$synodic" run "${flags[@]}" "${args[@]}" > "$work/$name.out" 2> "$work/$name.err" &
  run=$!
  [ "$mode" != watched ] || watch_page "$run" "$work/$name.err"
  wait "$run" || { echo "run.sh: $what ($mode) failed: $(cat "$work/$name.err")" >&2; exit 1; }
  stop_watching
}

# once WHAT MODE: one timed run (see `launch`); prints its figure and its
# context switches.
once() {
  local what=$1
  # GNU time counts the context switches of the run and of its other node.
  launch "$what" "$2" "$ring_m" once /usr/bin/time -o "$work/once.time" -f "%w %c"
  if [ "$what" = ring ]; then
    echo -n "$(field "$(cat "$work/once.out")" ns_per_send)"
  else
    echo -n "$(grep -o '[0-9.]* s' "$work/once.out" | head -1 | cut -d' ' -f1)"
  fi
  echo " $(awk '{print $1 + $2}' "$work/once.time")"
}

declare -A got
modes=(none unwatched watched)
for round in $(seq 0 $((repeat - 1))); do
  for what in ring pipeline; do
    declare -A this=()
    for k in 0 1 2; do
      mode=${modes[$(( (round + k) % 3 ))]}
      read -r figure switches < <(once $what $mode)
      this[$mode]=$figure
      got[$what.$mode]+="$figure "
      got[$what.$mode.switches]+="$switches "
    done
    # This round's own ratios, to the run without a dashboard.
    got[$what.unwatched.ratio]+="$(ratio "${this[unwatched]}" "${this[none]}") "
    got[$what.watched.ratio]+="$(ratio "${this[watched]}" "${this[none]}") "
  done
done
med() { echo "${got[$1]}" | tr ' ' '\n' | grep . | median; }
spread() { echo "${got[$1]}" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {printf "%s–%s", a[1], a[NR]}'; }

if [ "$repeat" -gt 0 ]; then
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

  echo
  echo "Context switches a run (medians; voluntary and involuntary, every node): ring $(med ring.none.switches), $(med ring.unwatched.switches), $(med ring.watched.switches); pipeline $(med pipeline.none.switches), $(med pipeline.unwatched.switches), $(med pipeline.watched.switches) (no dashboard, no page, page open)."
fi

# counted_once WHAT MODE: one run at the counted size under valgrind, every
# node of it (--trace-children); prints its instructions, all nodes summed,
# and its seconds.
counted_once() {
  local t0
  rm -f "$work"/cg.* "$work"/vg.*
  t0=$(date +%s.%N)
  # (--fair-sched: with valgrind's default lock a thread may wait seconds
  # for its turn, and the monitor's first step, which sets when wakers warm
  # a process, came before the ring's laps in some runs and after in others.)
  launch "$1" "$2" "$count_m" count valgrind --tool=cachegrind --cache-sim=no --fair-sched=yes --trace-children=yes --log-file="$work/vg.%p" --cachegrind-out-file="$work/cg.%p"
  echo "$(cat "$work"/cg.* | awk '/^summary:/ {s += $2} END {printf "%.0f", s}') $(seconds_since "$t0")"
}

# native_once WHAT: the seconds of the same run, no dashboard, at full speed.
native_once() {
  local t0
  t0=$(date +%s.%N)
  launch "$1" none "$count_m" count
  seconds_since "$t0"
}

# seconds_since T0: the seconds since T0 (`date +%s.%N`).
seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.3f", b - a}'; }

if [ "$counted" -gt 0 ]; then
  for r in $(seq 1 "$counted"); do
    for what in ring pipeline; do
      for mode in none unwatched watched; do
        read -r instructions seconds < <(counted_once $what $mode)
        got[$what.$mode.instructions]+="$instructions "
        got[$what.$mode.valgrind_s]+="$seconds "
      done
      got[$what.native_s]+="$(native_once $what) "
    done
  done
  echo
  echo "### Counted: instructions under valgrind ($counted runs of each, medians)"
  echo
  echo "No page: the whole run's instructions, every node, against the run without a dashboard. Page open: what a second of an open page adds (instructions of the run with a page, less those without one, over the seconds it ran under valgrind), against what the program runs in a second at full speed (its instructions over its seconds without valgrind); its ratio adds that to the no-page one."
  echo
  echo "| program, millions of instructions | no dashboard | --dashboard, no page | ratio | page open, a second | program, a second | ratio | goal |"
  echo "|---|---|---|---|---|---|---|---|"
  mega() { awk -v a="$1" 'BEGIN {printf "%.1f", a / 1e6}'; }
  for what in ring pipeline; do
    label="ring N=$ring_n M=$count_m (whole run)"; [ $what = ring ] || label="image pipeline ${images[*]} on 2 nodes (whole run)"
    n=$(med $what.none.instructions); u=$(med $what.unwatched.instructions); w=$(med $what.watched.instructions)
    page=$(awk -v w="$w" -v u="$u" -v t="$(med $what.watched.valgrind_s)" 'BEGIN {printf "%.0f", (w - u) / t}')
    rate=$(awk -v n="$n" -v t="$(med $what.native_s)" 'BEGIN {printf "%.0f", n / t}')
    echo "| $label | $(mega "$n") ($(spread $what.none.instructions | tr '–' ' ' | { read -r a b; echo "$(mega "$a")–$(mega "$b")"; })) | $(mega "$u") ($(spread $what.unwatched.instructions | tr '–' ' ' | { read -r a b; echo "$(mega "$a")–$(mega "$b")"; })) | **$(ratio "$u" "$n")** | $(mega "$page") | $(mega "$rate") | **$(awk -v u="$u" -v n="$n" -v p="$page" -v r="$rate" 'BEGIN {printf "%.3f", u / n + p / r}')** | ≤ 1.01, ≤ 1.05 |"
  done
fi

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
