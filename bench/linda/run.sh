#!/usr/bin/env bash
# bench/linda: Synodic's tuple spaces, side by side with Redis on the same
# producer/consumer workload (RPUSH + LPOP pairs on loopback, one request at a
# time per client, as an out or an in is).
#   Synodic: bench/linda/linda.lua (Table 1 by size, the out+in pair, pairs/s)
#   Redis:   redis-benchmark -t rpush,lpop with 1, 2 and 8 clients
# Prints markdown tables and the ratio Synodic ÷ Redis in pairs per second.
# --quick is the CI smoke (small counts; Redis skipped if not installed).
# usage: bench/linda/run.sh [--quick]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
scale=1
requests=200000
case "${1:-}" in
  --quick) scale=0.02; requests=5000 ;;
  -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
  "") ;;
  *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
esac
(cd "$root" && cargo build --release -q)
out=$(mktemp)
trap 'rm -f "$out"; [ -n "${redis_pid:-}" ] && kill "$redis_pid" 2>/dev/null || true' EXIT
"$root/target/release/synodic" run "$here/linda.lua" "$scale" | tee "$out"

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null || ! command -v redis-cli >/dev/null; then
  echo; echo "(redis-server not installed: Redis side skipped; apt-get install redis-server)"
  exit 0
fi
port=$((20000 + RANDOM % 10000))
redis-server --port "$port" --save "" --appendonly no --daemonize no >/dev/null 2>&1 &
redis_pid=$!
for _ in $(seq 50); do [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done

echo
echo "| pairs (clients) | Redis RPUSH/s | Redis LPOP/s | Redis pairs/s | Synodic pairs/s | Synodic ÷ Redis |"
echo "|---|---|---|---|---|---|"
for k in 1 2 8; do
  rates=$(redis-benchmark -p "$port" -n "$requests" -c "$k" -t rpush,lpop -q 2>/dev/null | tr '\r' '\n' | grep -E '^(RPUSH|LPOP): [0-9.]+ requests per second' | awk '{print $2}')
  rpush=$(echo "$rates" | sed -n 1p); lpop=$(echo "$rates" | sed -n 2p)
  pairs=$(awk -v a="$rpush" -v b="$lpop" 'BEGIN { printf "%.0f", 1 / (1 / a + 1 / b) }')
  ours=$(grep -E "^\| $k \| [0-9]+ \|$" "$out" | awk -F'|' '{gsub(/ /, "", $3); print $3}')
  echo "| $k | $rpush | $lpop | $pairs | $ours | $(awk -v a="$ours" -v b="$pairs" 'BEGIN { printf "%.1f", a / b }') |"
done
