#!/usr/bin/env bash
# bench/linda: Synodic's tuple spaces, side by side with Redis on the same
# producer/consumer workload (RPUSH + LPOP pairs on loopback, one request at a
# time per client, as an out or an in is).
#   Synodic: bench/linda/linda.lua (Table 1 by size, the out+in pair, pairs/s)
#            bench/linda/cluster.lua on two nodes (Table 1 between nodes, the
#            remote pair: out on one node, in on the other, 1 and 8 streams)
#            examples/linda/linpack.lua on 1, 2 and 3 nodes (Table 2)
#   Redis:   redis-benchmark -t rpush,lpop with 1, 2 and 8 clients
# Prints markdown tables and the ratio Synodic ÷ Redis in pairs per second.
# --quick is the CI smoke (small counts; Redis skipped if not installed).
# usage: bench/linda/run.sh [--quick]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
scale=1
requests=200000
order=1000
case "${1:-}" in
  --quick) scale=0.02; requests=5000; order=120 ;;
  -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
  "") ;;
  *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
esac
prepare
out="$work/out"
cookie="$work/cookie"
bench_cleanup() { if [ -n "${redis_pid:-}" ]; then kill "$redis_pid" 2>/dev/null || true; fi; }
head -c 24 /dev/urandom | base64 > "$cookie"
chmod 600 "$cookie"
"$synodic" run "$here/linda.lua" "$scale" | tee "$out"
echo
# Each node stands for one of the paper's one-CPU machines: one worker
# thread each, so that two or three nodes on this machine do not fight over
# its cores (with a worker per core each, their idle workers' spinning
# costs the busy ones: 2 nodes x 2 workers on 2 cores gave about half).
echo "Between two nodes of this machine, one worker thread each (the paper: Sun 4 workstations on Ethernet, 1991):"
echo
"$synodic" run --nodes 2 --workers 1 --cookie-file "$cookie" "$here/cluster.lua" "$scale" | tee -a "$out"

# Table 2: the parallel LU factorisation, master and space on the first
# node, one worker per node (the paper's machines A, B, C).
echo
echo "| machines | version | 1991 s | 1991 Mflop/s | Synodic s (order $order) | Synodic Mflop/s |"
echo "|---|---|---|---|---|---|"
paper() { # version machines -> "seconds mflops"
  case "$1 $2" in
    "unblocked 1") echo "113.6 5.87" ;; "unblocked 2") echo "73.05 9.12" ;; "unblocked 3") echo "66.61 10.00" ;;
    "blocked 1") echo "98.31 6.78" ;; "blocked 2") echo "64.52 10.32" ;; "blocked 3") echo "57.65 11.55" ;;
  esac
}
for mode in unblocked blocked; do
  for k in 1 2 3; do
    line=$("$synodic" run --nodes "$k" --workers 1 --cookie-file "$cookie" "$root/examples/linda/linpack.lua" "$order" "$k" "$mode" 8 spread)
    secs=$(echo "$line" | sed -E 's/.*; ([0-9.]+)s parallel.*/\1/')
    names=$(echo "A B C" | cut -d' ' -f1-"$k" | tr ' ' ',')
    read -r psecs pmflops <<< "$(paper "$mode" "$k")"
    echo "| $names | $mode | $psecs | $pmflops | $secs | $(awk -v n="$order" -v t="$secs" 'BEGIN { printf "%.1f", 2 * n * n * n / 3 / t / 1e6 }') |"
  done
done

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null || ! command -v redis-cli >/dev/null; then
  echo; echo "(redis-server not installed: Redis side skipped; apt-get install redis-server)"
  exit 0
fi
port=$((20000 + RANDOM % 10000))
redis-server --port "$port" --save "" --appendonly no --daemonize no >/dev/null 2>&1 &
redis_pid=$!
for _ in $(seq 50); do [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done

echo
echo "| pairs (clients) | Redis RPUSH/s | Redis LPOP/s | Redis pairs/s | Synodic pairs/s, one node | ÷ Redis | Synodic pairs/s, two nodes | ÷ Redis |"
echo "|---|---|---|---|---|---|---|---|"
for k in 1 2 8; do
  rates=$(redis-benchmark -p "$port" -n "$requests" -c "$k" -t rpush,lpop -q 2>/dev/null | tr '\r' '\n' | grep -E '^(RPUSH|LPOP): [0-9.]+ requests per second' | awk '{print $2}')
  rpush=$(echo "$rates" | sed -n 1p); lpop=$(echo "$rates" | sed -n 2p)
  pairs=$(awk -v a="$rpush" -v b="$lpop" 'BEGIN { printf "%.0f", 1 / (1 / a + 1 / b) }')
  ours=$(grep -E "^\| $k \| [0-9]+ \|$" "$out" | awk -F'|' '{gsub(/ /, "", $3); print $3}')
  remote=$(grep -E "^\| remote $k \| [0-9]+ \|$" "$out" | awk -F'|' '{gsub(/ /, "", $3); print $3}' || true)
  ratio() { [ -n "$1" ] && awk -v a="$1" -v b="$pairs" 'BEGIN { printf "%.1f", a / b }' || echo "–"; }
  echo "| $k | $rpush | $lpop | $pairs | $ours | $(ratio "$ours") | ${remote:-–} | $(ratio "$remote") |"
done
