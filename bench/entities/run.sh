#!/usr/bin/env bash
# bench/entities: the VEOS paper's primitives table re-run — fork, join,
# sync call round trip, async send+reply round trip, local and remote (two
# nodes) — for Synodic's entities and, in the same run, Erlang's
# gen_server on two `erl -sname` nodes; then Bounce's four placements in
# frames per second. Prints markdown tables with the paper's figures and
# the ratios. --quick is the CI smoke (small counts).
# usage: bench/entities/run.sh [--quick]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=20000
frames=1000
case "${1:-}" in
  --quick) n=500; frames=100 ;;
  -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
  "") ;;
  *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
esac
for tool in erl erlc epmd; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (apt-get install erlang-base)" >&2; exit 1; }
done
(cd "$root" && cargo build --release -q)
synodic="$root/target/release/synodic"
work=$(mktemp -d)
host=$(hostname)
cleanup() { pkill -f "sname ent_peer_$$" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
erlc -o "$work" "$here/entities.erl"
head -c 24 /dev/urandom | base64 > "$work/cookie"
chmod 600 "$work/cookie"
epmd -daemon

syn=$("$synodic" run --nodes 2 --cookie-file "$work/cookie" "$here/entities.lua" "$n" | tr '\n' ' ')
erl -sname "ent_peer_$$" -setcookie bench -noshell -pa "$work" >/dev/null 2>&1 &
until epmd -names 2>/dev/null | grep -q "ent_peer_$$"; do sleep 0.05; done
erl=$(erl -sname "ent_main_$$" -setcookie bench -noshell -pa "$work" -run entities main "ent_peer_$$@$host" "$n" | tr '\n' ' ')

field() { echo "$1" | grep -o "$2=[0-9.]*" | head -1 | cut -d= -f2; }
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

echo
echo "| placement | VEOS 1992, frames/s | Synodic, frames/s ($frames frames) |"
echo "|---|---|---|"
for p in "sequential 1 .54" "distributed 2 1.21" "wholesale 2 1.17" "parallel 3 .97"; do
  read -r placement nodes theirs <<< "$p"
  line=$("$synodic" run --nodes "$nodes" --cookie-file "$work/cookie" "$root/examples/entities/bounce.lua" "$frames" "$placement" "$work/bounce.html" | tail -1)
  fps=$(echo "$line" | sed -E 's/.*, ([0-9.]+) frames\/s.*/\1/')
  echo "| $placement | $theirs | $fps |"
done
