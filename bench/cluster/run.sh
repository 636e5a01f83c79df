#!/usr/bin/env bash
# bench/cluster: Synodic's distribution against Erlang's (two `erl -sname`
# nodes on this machine, default settings), side by side in one run, on
# loopback. Prints a markdown table of medians with Synodic ÷ Erlang:
#   ping-pong    one small message each way between two nodes, µs per round trip
#   stream       one-way small messages from a process to one on another node, msgs/s
#   remote spawn spawn a function on the other node and get its first message, µs
#   detection    time from SIGKILL of a node to its monitor's nodedown, ms
#   32 nodes     time for `run --nodes 32` to form a cluster; an idle node's RSS
# --quick runs few iterations and 8 nodes (the CI smoke).
# usage: bench/cluster/run.sh [--quick] [--repeat R]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
repeat=5
n_pingpong=20000
n_stream=500000
n_spawn=5000
big=32
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) repeat=1; n_pingpong=2000; n_stream=20000; n_spawn=200; big=8 ;;
    --repeat) repeat="$2"; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
for tool in erl erlc epmd; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (apt-get install erlang-base)" >&2; exit 1; }
done
(cd "$root" && cargo build --release -q)
synodic="$root/target/release/synodic"
work=$(mktemp -d)
host=$(hostname)
cleanup() { pkill -f "sname bench_peer_$$" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
erlc -o "$work" "$here/cluster.erl" "$here/detect.erl"
printf 'bench cookie for synodic cluster\n' > "$work/cookie"
chmod 600 "$work/cookie"
epmd -daemon

field() { echo "$1" | grep -o "$2=[0-9.]*" | head -1 | cut -d= -f2; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
now_ns() { date +%s%N; }

syn() { "$synodic" run --nodes 2 --cookie-file "$work/cookie" "$here/cluster.lua" "$1" "$2"; }
erl_peer() { erl -sname "bench_peer_$$" -setcookie bench -noshell -pa "$work" >/dev/null 2>&1 & echo $!; }
erl_run() {
  local peer
  peer=$(erl_peer)
  # The peer registers with epmd as it starts; the main node's ping waits.
  until epmd -names 2>/dev/null | grep -q "bench_peer_$$"; do sleep 0.05; done
  erl -sname "bench_main_$$" -setcookie bench -noshell -pa "$work" -run cluster main "bench_peer_$$@$host" "$1" "$2"
  wait "$peer" 2>/dev/null || true
}

# row LABEL KEY N BETTER: interleaved runs, medians, ratio
row() {
  : > "$work/syn"; : > "$work/erl"
  for _ in $(seq "$repeat"); do
    field "$(syn "$2" "$3")" "$1" >> "$work/syn"
    field "$(erl_run "$2" "$3")" "$1" >> "$work/erl"
  done
  local s e
  s=$(median < "$work/syn"); e=$(median < "$work/erl")
  echo "| $4 | $s | $e | $(ratio "$s" "$e") | $5 |"
}

# Detection: a node is killed with SIGKILL once the watcher says "ready".
syn_detect() {
  local victim_log="$work/victim.log" victim addr t0
  "$synodic" node --listen 127.0.0.1:0 --name "victim$$" --cookie-file "$work/cookie" 2> "$victim_log" &
  victim=$!
  disown "$victim" # killed on purpose: no job notice
  until grep -q "listening on" "$victim_log"; do sleep 0.01; done
  addr=$(grep -o 'listening on .*' "$victim_log" | awk '{print $3}')
  coproc W { "$synodic" run --join "$addr" --cookie-file "$work/cookie" "$here/detect.lua" "victim$$@$host" 2>/dev/null; }
  read -r _ <&"${W[0]}"
  t0=$(now_ns); kill -9 "$victim"
  read -r _ <&"${W[0]}" || true
  echo $(( ($(now_ns) - t0) / 1000000 ))
  wait "$W_PID" 2>/dev/null || true
}
erl_detect() {
  local peer t0
  peer=$(erl_peer)
  until epmd -names 2>/dev/null | grep -q "bench_peer_$$"; do sleep 0.05; done
  coproc E { erl -sname "bench_watch_$$" -setcookie bench -noshell -pa "$work" -run detect main "bench_peer_$$@$host"; }
  read -r _ <&"${E[0]}"
  t0=$(now_ns); kill -9 "$peer"
  read -r _ <&"${E[0]}" || true
  echo $(( ($(now_ns) - t0) / 1000000 ))
  wait "$peer" 2>/dev/null || true
  wait "$E_PID" 2>/dev/null || true
}

echo "| measure | Synodic | Erlang | Synodic ÷ Erlang | goal |"
echo "|---|---|---|---|---|"
row pingpong_us pingpong "$n_pingpong" "ping-pong round trip, µs" "≤ 0.5"
row stream_msgs_per_s stream "$n_stream" "one-way stream, msgs/s" "≥ 4"
row spawn_us spawn "$n_spawn" "remote spawn + first reply, µs" "≤ 1"
: > "$work/syn"; : > "$work/erl"
for _ in $(seq "$repeat"); do syn_detect >> "$work/syn"; erl_detect >> "$work/erl"; done
s=$(median < "$work/syn"); e=$(median < "$work/erl")
echo "| SIGKILLed node detected, ms | $s | $e | $(ratio "$s" "$e") | ≤ 3000 ms |"
line=$("$synodic" run --nodes "$big" --cookie-file "$work/cookie" "$here/idle.lua")
echo "| $big local nodes form a cluster, s | $(field "$line" formed_s) | – | – | ≤ 5 s (32 nodes) |"
echo "| idle node RSS, MB | $(field "$line" max_idle_rss_mb) | – | – | ≤ 20 MB |"
echo "| one 64 MB buffer node to node | not measured: buffers do not cross nodes yet | | | ≥ 1 GB/s |"
