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
# For each cell: the median time over the runs, the deviation, and
# Synodic ÷ MPI, in the paper's layout; then one line per cell:
#   RESULT app=nbody bodies=1024 nodes=4 iterations=10 ratio=0.97
#   RESULT app=volume partition=pixel distribution=dynamic nodes=4 ratio=1.3
# Nodes and ranks are OS processes on this machine (2 cores: 4 of them are
# oversubscribed, for both); each Synodic node runs one worker thread
# (--workers 1), as each MPI rank is one thread (with a worker a core, 4
# nodes are 8 worker threads on 2 cores: the pixel partition took twice as
# long). Runs alternate Synodic, MPI, Synodic, ...
# --quick: a small subset, one run each (the CI smoke).
# usage: bench/alua-apps/run.sh [--quick] [--runs R]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
runs=5
bodies="512 1024 2048 4096"
iterations="1 10 20"
nodes="2 4"
size=256
voxels=128
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) runs=1; bodies="512 1024"; iterations="10"; nodes="2"; size=64; voxels=32 ;;
    --runs) runs="$2"; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
need "apt-get install openmpi-bin libopenmpi-dev gcc python3" mpicc mpirun cc python3
prepare
src="$root/examples/nbody"
cc -O2 -shared -fPIC -I "$root/vendor/lua-5.4.8" -I "$root/include" "$src/nbody.c" "$src/bh.c" -o "$work/nbody.so" -lm
mpicc -O2 "$src/nbody_mpi.c" "$src/bh.c" -o "$work/nbody_mpi" -lm
vsrc="$root/examples/volume"
cc -O2 -shared -fPIC -I "$root/vendor/lua-5.4.8" -I "$root/include" "$vsrc/volume.c" "$vsrc/vr.c" -o "$work/volume.so" -lm
mpicc -O2 "$vsrc/volume_mpi.c" "$vsrc/vr.c" -o "$work/volume_mpi" -lm
export LUA_CPATH_5_4="$work/?.so;;" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
head -c 24 /dev/urandom | base64 > "$work/cookie"
chmod 600 "$work/cookie"

seconds() { grep -o '[0-9.]* s$' | cut -d' ' -f1; }
syn() { "$synodic" run --workers 1 --nodes "$3" --cookie-file "$work/cookie" "$src/nbody.lua" "$1" "$2" 2>/dev/null | seconds; }
mpi() { mpirun --oversubscribe -np "$3" "$work/nbody_mpi" "$1" "$2" 2>/dev/null | seconds; }
# stats TIMES...: median and sample deviation
stats() { python3 -c 'import sys, statistics as s; t = [float(x) for x in sys.argv[1:]]; print(f"{s.median(t):.4f} {s.stdev(t) if len(t) > 1 else 0:.4f}")' "$@"; }

echo "### N-body (Barnes-Hut, opening angle 0.5): seconds for the iterations, median of $runs runs (deviation)"
echo
echo "| bodies | iterations | nodes | Synodic s | MPI s | Synodic ÷ MPI |"
echo "|---|---|---|---|---|---|"
results=()
# cell ROW RESULT SYNODIC_FN MPI_FN ARGS...: both programs $runs times in
# turn on ARGS; prints the table's row (ROW, then the figures) and keeps
# the RESULT line.
cell() {
  local row=$1 result=$2 syn_fn=$3 mpi_fn=$4 a=() b=() sm sd mm md r
  shift 4
  for _ in $(seq "$runs"); do a+=("$("$syn_fn" "$@")"); b+=("$("$mpi_fn" "$@")"); done
  read -r sm sd <<< "$(stats "${a[@]}")"
  read -r mm md <<< "$(stats "${b[@]}")"
  r=$(awk -v a="$sm" -v b="$mm" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
  echo "| $row | $sm ($sd) | $mm ($md) | $r |"
  results+=("$result ratio=$r")
}
for n in $bodies; do
  for it in $iterations; do
    for np in $nodes; do
      cell "$n | $it | $np" "RESULT app=nbody bodies=$n nodes=$np iterations=$it" syn mpi "$n" "$it" "$np"
    done
  done
done
echo
echo "### Volume visualization: a ${size}x$size picture of a $voxels^3 volume, seconds, median of $runs runs (deviation)"
echo
echo "| partition | distribution | nodes (workers) | Synodic s | MPI s | Synodic ÷ MPI |"
echo "|---|---|---|---|---|---|"
vsyn() { "$synodic" run --workers 1 --nodes "$3" --cookie-file "$work/cookie" "$vsrc/volume.lua" "$1" "$2" "$size" "$voxels" 2>/dev/null | grep -o '[0-9.]* s,' | cut -d' ' -f1; }
vmpi() { mpirun --oversubscribe -np "$3" "$work/volume_mpi" "$1" "$2" "$size" "$voxels" 2>/dev/null | grep -o '[0-9.]* s,' | cut -d' ' -f1; }
for part in pixel scanline block; do
  for dist in static dynamic; do
    for np in $nodes; do
      cell "$part | $dist | $np ($((np - 1)))" "RESULT app=volume partition=$part distribution=$dist nodes=$np" vsyn vmpi "$part" "$dist" "$np"
    done
  done
done
echo
printf '%s\n' "${results[@]}"
