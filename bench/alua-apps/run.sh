#!/usr/bin/env bash
# bench/alua-apps: the ALua paper's applications (its Tables 1 and 2)
# against the same kernels in C with MPI (Debian's OpenMPI), side by side in
# one run. The N-body (examples/nbody): a Barnes-Hut simulation where each
# node (or rank) moves its share of the bodies with the C kernel of bh.c
# and trades shares with every other at the end of each iteration
# (Synodic: messages, peer to peer; MPI: MPI_Allgatherv). The volume
# visualization (examples/volume): a master deals a 256x256 picture of a
# 128^3 volume out by pixels, scanlines or 16x16 blocks, statically or
# dynamically, to a worker on each other node (ray casting in vr.c).
# MPI runs twice: over TCP (`--mca btl self,tcp`: every message crosses a
# connection, as on the paper's network of workstations and as between
# Synodic's nodes) and over shared memory (ranks of one machine, its
# default). For each cell: the median time over the runs, the deviation,
# and Synodic ÷ MPI, in the paper's layout; then both tables again with
# every link between nodes (ranks) delayed (20 ms each way, through
# bench/skel/delay_proxy.py; MPI's connections reach it through
# delay_connect.so); then one line per cell:
#   RESULT app=nbody bodies=1024 nodes=4 iterations=10 ratio=0.97 ratio_shm=1.2
#   RESULT app=volume delay_ms=20 partition=pixel distribution=static nodes=4 ratio=0.4
# (ratio: ÷ MPI over TCP; ratio_shm: ÷ MPI over shared memory).
# Nodes and ranks are OS processes on this machine (2 cores: 4 of them are
# oversubscribed, for both); each Synodic node runs one worker thread
# (--workers 1), as each MPI rank is one thread, and is bound to a core
# (--bind) where mpirun binds each rank to one (2 of them; at 4 neither
# binds). The delayed runs start their nodes one by one, unbound (mpirun
# still binds its 2 ranks there). Runs alternate Synodic,
# MPI over TCP, MPI over shared memory.
# --quick: a small subset, one run each (the CI smoke); --delay MS: the
# delay (0: no delayed tables); --delay-runs R: runs of each delayed cell;
# --bodies "512 ...", --nodes "2 4": the N-body's sizes, the node counts;
# --tables direct|delayed|all: which tables. A run that takes more than
# 300 s is ended and named.
# usage: bench/alua-apps/run.sh [--quick] [--runs R] [--delay MS] [--delay-runs R]
#          [--bodies LIST] [--nodes LIST] [--tables direct|delayed|all]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
runs=5
delay=20
delay_runs=3
bodies="512 1024 2048 4096"
iterations="1 10 20"
nodes="2 4"
size=256
voxels=128
partitions="pixel scanline block"
tables=all
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) runs=1; delay_runs=1; bodies="512 1024"; iterations="10"; nodes="2"; size=64; voxels=32; partitions="pixel scanline" ;;
    --runs) runs="$2"; shift ;;
    --delay) delay="$2"; shift ;;
    --delay-runs) delay_runs="$2"; shift ;;
    --bodies) bodies="$2"; shift ;;
    --nodes) nodes="$2"; shift ;;
    --tables) tables="$2"; shift ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
need "apt-get install openmpi-bin libopenmpi-dev gcc python3" mpicc mpirun cc python3
prepare
src="$root/examples/nbody"
vsrc="$root/examples/volume"
cc -O2 -shared -fPIC -I "$root/vendor/lua-5.4.8" -I "$root/include" "$src/nbody.c" "$src/bh.c" -o "$work/nbody.so" -lm
mpicc -O2 "$src/nbody_mpi.c" "$src/bh.c" -o "$work/nbody_mpi" -lm
cc -O2 -shared -fPIC -I "$root/vendor/lua-5.4.8" -I "$root/include" "$vsrc/volume.c" "$vsrc/vr.c" -o "$work/volume.so" -lm
mpicc -O2 "$vsrc/volume_mpi.c" "$vsrc/vr.c" -o "$work/volume_mpi" -lm
cc -O2 -shared -fPIC "$here/delay_connect.c" -o "$work/delay_connect.so" -ldl
export LUA_CPATH_5_4="$work/?.so;;" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
head -c 24 /dev/urandom | base64 > "$work/cookie"
chmod 600 "$work/cookie"
port=$(port_base 200)
pids=()
bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}

# The programs. Each prints one line ending in its seconds (the N-body:
# `... T s`; the volume: `... T s, checksum C`).
seconds() { grep -o '[0-9.]* s\(,\|$\)' | grep -o '^[0-9.]*'; }
program() { case "$1" in nbody) echo "$src/nbody.lua" ;; volume) echo "$vsrc/volume.lua" ;; esac; }
mpi_program() { echo "$work/$1_mpi"; }
# syn APP NODES ARGS...: Synodic on NODES nodes of this machine.
syn() { local app=$1 np=$2; shift 2; "$synodic" run --workers 1 --bind --nodes "$np" --cookie-file "$work/cookie" "$(program "$app")" "$@" 2>"$work/run.err" | seconds; }
mpi_tcp() { local app=$1 np=$2; shift 2; mpirun --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo -np "$np" "$(mpi_program "$app")" "$@" 2>"$work/run.err" | seconds; }
mpi_shm() { local app=$1 np=$2; shift 2; mpirun --oversubscribe -np "$np" "$(mpi_program "$app")" "$@" 2>"$work/run.err" | seconds; }

# The delayed programs. Synodic: the nodes started by `slow_nodes`, each
# listening behind a proxy of its own that it advertises, so that every
# link crosses one proxy; the run's node joins them through theirs (named
# "a..." so that it sorts first, as --nodes's does). MPI over TCP: its
# ranks' connections go through one routing proxy.
slow=0
python=python3
slow_port() { echo $((port + 100 + $1)); }
slow_proxy() { "$python" "$root/bench/skel/delay_proxy.py" "$@" & pids+=($!); }
# slow_nodes N: N-1 nodes, each behind its delaying proxy (ended first
# if some are running).
slow_nodes() {
  bench_cleanup
  pids=()
  slow_proxy --route "$(slow_port 0)" "$delay"
  slow_proxy "$(slow_port 2)" "$(slow_port 1)" "$delay"
  for i in $(seq 1 $(($1 - 1))); do
    slow_proxy "$(slow_port $((10 + i)))" "$(slow_port $((20 + i)))" "$delay"
  done
  # Each proxy listens before anyone is sent through it.
  for p in $(slow_port 0) $(slow_port 2) $(seq "$(slow_port 11)" "$(slow_port $((9 + $1)))"); do
    wait_until 30 "the delaying proxy on port $p listening" listening "$p"
  done
  local join=()
  for i in $(seq 1 $(($1 - 1))); do
    "$synodic" node --workers 1 --cookie-file "$work/cookie" --listen "127.0.0.1:$(slow_port $((20 + i)))" \
      --advertise "127.0.0.1:$(slow_port $((10 + i)))" --name "n$i-$1-$$" "${join[@]}" 2> "$work/node$i.log" & pids+=($!)
    join=(--join "127.0.0.1:$(slow_port 11)")
    wait_until 30 "node $i listening" grep -q "listening on" "$work/node$i.log"
  done
}
syn_slow() {
  local app=$1 np=$2; shift 2
  slow=$((slow + 1))
  "$synodic" run --workers 1 --cookie-file "$work/cookie" --listen "127.0.0.1:$(slow_port 1)" --advertise "127.0.0.1:$(slow_port 2)" \
    --join "127.0.0.1:$(slow_port 11)" --name "a$slow$$" "$here/joined.lua" "$np" "$(program "$app")" "$@" 2>"$work/run.err" | seconds
}
mpi_slow() {
  local app=$1 np=$2; shift 2
  mpirun --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo -x LD_PRELOAD="$work/delay_connect.so" \
    -x DELAY_PROXY_PORT="$(slow_port 0)" -np "$np" "$(mpi_program "$app")" "$@" 2>"$work/run.err" | seconds
}


# stats TIMES...: median and sample deviation
stats() { python3 -c 'import sys, statistics as s; t = [float(x) for x in sys.argv[1:]]; print(f"{s.median(t):.4f} {s.stdev(t) if len(t) > 1 else 0:.4f}" if t else "- -")' "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }'; }

# limit SECONDS FN ARGS...: FN (a function of this script) in a subshell,
# ended with its children after SECONDS.
limit() {
  local seconds=$1
  shift
  ( "$@" ) &
  local job=$!
  # (its output away from the caller's: a sleep left holding a $(...)
  # would keep it waiting)
  ( sleep "$seconds" && { pkill -P "$job"; kill "$job"; } ) >/dev/null 2>&1 &
  local watch=$!
  wait "$job"
  local rc=$?
  pkill -P "$watch" 2>/dev/null
  kill "$watch" 2>/dev/null
  return "$rc"
}

results=()
# cell N ROW RESULT FNS -- ARGS...: the programs FNS (Synodic's first), N
# runs each in turn, on ARGS; prints the table's row (ROW, then each
# program's median and deviation, then Synodic ÷ each other) and keeps the
# RESULT line with the ratios (ratio, then ratio_shm).
cell() {
  local n=$1 row=$2 result=$3 fns=() i fn got line ratios
  shift 3
  while [ "$1" != -- ]; do fns+=("$1"); shift; done
  shift
  declare -A t=()
  for _ in $(seq "$n"); do
    for fn in "${fns[@]}"; do
      got=$(limit 300 "$fn" "$@" || true)
      if [ -n "$got" ]; then t[$fn]+="$got "
      else echo "run.sh: $fn $* gave no time: $(grep -m1 -i "error\|refused\|cannot" "$work/run.err" || tail -1 "$work/run.err")" >&2
      fi
    done
  done
  line="| $row"
  local medians=()
  for fn in "${fns[@]}"; do
    read -r m d <<< "$(stats ${t[$fn]})"
    medians+=("$m")
    line+=" | $m ($d)"
  done
  ratios=""
  for i in $(seq 1 $((${#fns[@]} - 1))); do
    r=$(ratio "${medians[0]}" "${medians[$i]}")
    line+=" | $r"
    ratios+=" $([ "$i" = 1 ] && echo ratio || echo ratio_shm)=$r"
  done
  echo "$line |"
  results+=("$result$ratios")
}

# tag DELAYED: what a RESULT line says of the delay.
tag() { [ "$1" = 0 ] || echo " delay_ms=$delay"; }
# nbody_table N DELAYED FNS...: the N-body table.
nbody_table() {
  local n=$1 delayed=$2
  shift 2
  for np in $nodes; do
    [ "$delayed" = 0 ] || slow_nodes "$np"
    for b in $bodies; do
      for it in $iterations; do
        cell "$n" "$b | $it | $np" "RESULT app=nbody$(tag "$delayed") bodies=$b nodes=$np iterations=$it" "$@" -- nbody "$np" "$b" "$it"
      done
    done
  done
}
# volume_table N DELAYED FNS...: the volume table (delayed: no pixels
# dealt one at a time, which would be 32,768 round trips of twice the
# delay, for either program).
volume_table() {
  local n=$1 delayed=$2
  shift 2
  for np in $nodes; do
    [ "$delayed" = 0 ] || slow_nodes "$np"
    for part in $partitions; do
      for dist in static dynamic; do
        [ "$delayed" = 0 ] || [ "$part $dist" != "pixel dynamic" ] || continue
        cell "$n" "$part | $dist | $np ($((np - 1)))" "RESULT app=volume$(tag "$delayed") partition=$part distribution=$dist nodes=$np" "$@" -- volume "$np" "$part" "$dist" "$size" "$voxels"
      done
    done
  done
}

if [ "$tables" != delayed ]; then
echo "### N-body (Barnes-Hut, opening angle 0.5): seconds for the iterations, median of $runs runs (deviation)"
echo
echo "| bodies | iterations | nodes | Synodic s | MPI tcp s | MPI shm s | ÷ MPI tcp | ÷ MPI shm |"
echo "|---|---|---|---|---|---|---|---|"
nbody_table "$runs" 0 syn mpi_tcp mpi_shm
echo
echo "### Volume visualization: a ${size}x$size picture of a $voxels^3 volume, seconds, median of $runs runs (deviation)"
echo
echo "| partition | distribution | nodes (workers) | Synodic s | MPI tcp s | MPI shm s | ÷ MPI tcp | ÷ MPI shm |"
echo "|---|---|---|---|---|---|---|---|"
volume_table "$runs" 0 syn mpi_tcp mpi_shm
fi
if [ "$delay" != 0 ] && [ "$tables" != direct ]; then
  echo
  echo "### N-body, every link delayed $delay ms each way: median of $delay_runs runs (deviation)"
  echo
  echo "| bodies | iterations | nodes | Synodic s | MPI tcp s | ÷ MPI tcp |"
  echo "|---|---|---|---|---|---|"
  nbody_table "$delay_runs" 1 syn_slow mpi_slow
  echo
  echo "### Volume visualization, every link delayed $delay ms each way: median of $delay_runs runs (deviation)"
  echo
  echo "| partition | distribution | nodes (workers) | Synodic s | MPI tcp s | ÷ MPI tcp |"
  echo "|---|---|---|---|---|---|"
  volume_table "$delay_runs" 1 syn_slow mpi_slow
fi
echo
printf '%s\n' "${results[@]}"
