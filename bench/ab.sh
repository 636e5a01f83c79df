#!/usr/bin/env bash
# bench/ab.sh: two builds of Synodic against each other, interleaved in one
# run, on the Synodic side of each benchmark: the ring (ns per send), the
# cluster (remote ping-pong, stream, remote spawn), skeletons (task
# overhead, two nodes) and entities (fork, sync and async round trips,
# local and remote). For a change that must show no loss: build the old
# commit into another target directory, then
#   bench/ab.sh OLD_BINARY NEW_BINARY [ROUNDS]
# Each round runs every program with A, then with B; the table gives each
# figure's median over the rounds and the ratio B ÷ A (for times, below 1
# is B faster; for rates, above 1).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
[ $# -ge 2 ] || { sed -n '2,11p' "$0"; exit 2; }
a=$1 b=$2 rounds=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'bench cookie for old and new builds\n' > "$work/cookie"

# Every program prints name=value figures on its last line.
programs=(
  "run $root/examples/ring.lua 10000 100"
  "run --nodes 2 --cookie-file $work/cookie $here/cluster/cluster.lua pingpong 20000"
  "run --nodes 2 --cookie-file $work/cookie $here/cluster/cluster.lua stream 200000"
  "run --nodes 2 --cookie-file $work/cookie $here/cluster/cluster.lua spawn 500"
  "run --nodes 2 --cookie-file $work/cookie $here/skel/overhead.lua 2000 there"
  "run --nodes 2 --cookie-file $work/cookie $here/entities/entities.lua 2000"
)
for _ in $(seq "$rounds"); do
  for p in "${programs[@]}"; do
    for side in a b; do
      bin=$a; [ "$side" = b ] && bin=$b
      # shellcheck disable=SC2086
      "$bin" $p 2>/dev/null | tail -2 | tr ' ' '\n' | grep '=' | grep -v '^N=\|^M=' | sed "s/^/$side /" >> "$work/figures"
    done
  done
done
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "| figure | A (median of $rounds) | B | B ÷ A |"
echo "|---|---|---|---|"
for name in $(awk '{split($2, f, "="); print f[1]}' "$work/figures" | awk '!seen[$0]++'); do
  ma=$(grep "^a $name=" "$work/figures" | cut -d= -f2 | tr -d 's' | median)
  mb=$(grep "^b $name=" "$work/figures" | cut -d= -f2 | tr -d 's' | median)
  ratio=$(awk -v a="$ma" -v b="$mb" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "–" }')
  echo "| $name | $ma | $mb | $ratio |"
done
