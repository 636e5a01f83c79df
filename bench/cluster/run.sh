#!/usr/bin/env bash
# bench/cluster: Synodic's distribution against Erlang's (two `erl -sname`
# nodes on this machine), side by side in one run, on loopback. Prints a
# markdown table of medians with Synodic ÷ Erlang:
#   ping-pong    one small message each way between two nodes, µs per round trip
#   stream       one-way small messages from a process to one on another node, msgs/s
#   remote spawn spawn a function on the other node and get its first message, µs
#   64 MB        one buffer to the other node, GB/s, and the p99 of small round
#                trips between the same nodes meanwhile, ms
#   detection    time from SIGKILL of a node to its monitor's nodedown, ms
#   heal         a node stopped (SIGSTOP) long enough to be declared down while
#                both sides register a name and use a space: time from SIGCONT
#                until every node agrees on members, name and space home, ms
#   32 nodes     time for `run --nodes 32` to form a cluster; an idle node's RSS
# and then the floor under the ping-pong: the same round trip between two
# bare C processes (pingpong.c), both spinning and both blocking, with
# Synodic ÷ each.
# Ping-pong, stream and 64 MB run on four systems: Synodic (encrypted, the
# default), Synodic --no-encryption, Erlang (default settings) and Erlang
# over TLS (-proto_dist inet_tls, a self-signed certificate made here,
# verify_none); the other rows compare Synodic with Erlang.
# --quick runs few iterations and 8 nodes (the CI smoke).
# usage: bench/cluster/run.sh [--quick] [--repeat R]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
repeat=5
n_pingpong=20000
n_stream=500000
n_spawn=5000
big=32
mb=64
stall=10
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) repeat=1; n_pingpong=2000; n_stream=20000; n_spawn=200; big=8; mb=8; stall=3 ;;
    --repeat) repeat="$2"; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
need "apt-get install erlang-base" erl erlc epmd
need "apt-get install openssl" openssl
# Erlang over TLS needs the ssl application (and crypto, public_key, asn1).
erl -noshell -eval 'halt(case ssl:start() of ok -> 0; _ -> 1 end)' >/dev/null 2>&1 ||
  { echo "run.sh: Erlang's ssl application does not start (apt-get install erlang-ssl)" >&2; exit 1; }
prepare
host=$(hostname)
bench_cleanup() { pkill -f "sname bench_peer_$$" 2>/dev/null || true; }
erlc -o "$work" "$here/cluster.erl" "$here/detect.erl"
printf 'bench cookie for synodic cluster\n' > "$work/cookie"
chmod 600 "$work/cookie"
epmd -daemon
# Erlang over TLS: a self-signed certificate; both nodes accept any peer
# (verify_none) and still prove the cookie.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=bench" \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
cat > "$work/ssl_dist.conf" <<EOF
[{server, [{certfile, "$work/cert.pem"}, {keyfile, "$work/key.pem"},
           {verify, verify_none}, {secure_renegotiate, true}]},
 {client, [{verify, verify_none}, {secure_renegotiate, true}]}].
EOF
tls=(-proto_dist inet_tls -ssl_dist_optfile "$work/ssl_dist.conf")

field() { echo "$1" | grep -o "$2=[0-9.]*" | head -1 | cut -d= -f2; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "–" }'; }
now_ns() { date +%s%N; }

# syn MODE N [RUN FLAGS...]; erl_run MODE N [ERL FLAGS...] (for both nodes)
# A run that has not ended in 5 minutes is stopped and named (its figure is
# left out of the medians): one ping-pong run hung once, both nodes idle.
syn() {
  timeout -k 5 300 "$synodic" run --nodes 2 --cookie-file "$work/cookie" "${@:3}" "$here/cluster.lua" "$1" "$2" ||
    echo "run.sh: synodic run ${*:3} cluster.lua $1 $2 did not end within 300 s (or failed); left out" >&2
}
erl_peer() { erl -sname "bench_peer_$$" -setcookie bench -noshell -pa "$work" "$@" >/dev/null 2>&1 & echo $!; }
erl_run() {
  local mode=$1 n=$2
  shift 2
  local peer
  erl_peer "$@" >/dev/null
  peer=$!
  # The peer registers with epmd as it starts; the main node's ping waits.
  wait_until 30 "Erlang's peer node registered" epmd_has "bench_peer_$$"
  # (What Erlang's logger says as a TLS node stops would land in the
  # middle of the tables: it goes to a file.)
  erl -sname "bench_main_$$" -setcookie bench -noshell -pa "$work" "$@" -run cluster main "bench_peer_$$@$host" "$mode" "$n" 2>>"$work/erl.err"
  # The next run's peer takes the same name, and the next run (of either
  # system) has the processors to itself: this one must be gone.
  await_exit "$peer"
  while epmd -names 2>/dev/null | grep -q "bench_peer_$$"; do sleep 0.05; done
}
# system NAME MODE N: one run of a system (syn, syn_plain, erl, erl_tls)
system() {
  case "$1" in
    syn) syn "$2" "$3" ;;
    syn_plain) syn "$2" "$3" --no-encryption ;;
    erl) erl_run "$2" "$3" ;;
    erl_tls) erl_run "$2" "$3" "${tls[@]}" ;;
  esac
}

# rows SYSTEMS MODE N (FIELD LABEL GOAL)...: interleaved runs of one mode
# on each of SYSTEMS (those of `system`), and a row of medians and their
# ratios for each field it prints ("–" for a system not in SYSTEMS)
rows() {
  local systems=$1 mode=$2 n=$3 sys
  local -A m
  shift 3
  for sys in $systems; do : > "$work/$sys.out"; done
  for _ in $(seq "$repeat"); do
    for sys in $systems; do system "$sys" "$mode" "$n" >> "$work/$sys.out"; done
  done
  while [ $# -gt 0 ]; do
    for sys in syn syn_plain erl erl_tls; do
      m[$sys]="–"
      if [[ " $systems " == *" $sys "* ]]; then
        m[$sys]=$(grep -o "$1=[0-9.]*" "$work/$sys.out" | cut -d= -f2 | median)
      fi
    done
    echo "| $2 | ${m[syn]} | ${m[syn_plain]} | ${m[erl]} | ${m[erl_tls]} | $(ratio "${m[syn]}" "${m[erl]}") | $(ratio "${m[syn]}" "${m[erl_tls]}") | $3 |"
    shift 3
  done
}

# Detection: a node is killed with SIGKILL once the watcher says "ready".
syn_detect() {
  local victim_log="$work/victim.log" victim addr t0 watcher from
  : > "$victim_log" # there before the node's shell opens it
  "$synodic" node --listen 127.0.0.1:0 --name "victim$$" --cookie-file "$work/cookie" 2> "$victim_log" &
  victim=$!
  disown "$victim" # killed on purpose: no job notice
  wait_until 30 "the node to kill listening" grep -q "listening on" "$victim_log"
  addr=$(grep -o 'listening on .*' "$victim_log" | awk '{print $3}')
  coproc W { "$synodic" run --join "$addr" --cookie-file "$work/cookie" "$here/detect.lua" "victim$$@$host" 2>/dev/null; }
  # (bash unsets W and W_PID once the coprocess has ended: kept at once)
  watcher=$W_PID from=${W[0]}
  read -r _ <&"$from"
  t0=$(now_ns); kill -9 "$victim"
  read -r _ <&"$from" || true
  echo $(( ($(now_ns) - t0) / 1000000 ))
  wait "$watcher" 2>/dev/null || true
}
erl_detect() {
  local peer t0 watcher from
  peer=$(erl_peer)
  wait_until 30 "Erlang's peer node registered" epmd_has "bench_peer_$$"
  coproc E { erl -sname "bench_watch_$$" -setcookie bench -noshell -pa "$work" -run detect main "bench_peer_$$@$host"; }
  watcher=$E_PID from=${E[0]}
  read -r _ <&"$from"
  t0=$(now_ns); kill -9 "$peer"
  read -r _ <&"$from" || true
  echo $(( ($(now_ns) - t0) / 1000000 ))
  wait "$peer" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
}

echo "| measure | Synodic | Synodic --no-encryption | Erlang | Erlang TLS | Synodic ÷ Erlang | Synodic ÷ Erlang TLS | goal |"
echo "|---|---|---|---|---|---|---|---|"
all="syn syn_plain erl erl_tls"
rows "$all" pingpong "$n_pingpong" pingpong_us "ping-pong round trip, µs" "≤ 0.5 × Erlang"
syn_pingpong=$(grep -o "pingpong_us=[0-9.]*" "$work/syn.out" | cut -d= -f2 | median)
rows "$all" stream "$n_stream" stream_msgs_per_s "one-way stream, msgs/s" "≥ 4 × Erlang, ≥ 3 × Erlang TLS"
rows "syn erl" spawn "$n_spawn" spawn_us "remote spawn + first reply, µs" "≤ 1 × Erlang"
rows "$all" big "$mb" big_gb_per_s "one $mb MB buffer node to node, GB/s" "≥ 2 GB/s" \
  big_p99_ms "small round trip meanwhile, p99 ms" "≤ 5 ms"
: > "$work/syn"; : > "$work/erl"
for _ in $(seq "$repeat"); do syn_detect >> "$work/syn"; erl_detect >> "$work/erl"; done
s=$(median < "$work/syn"); e=$(median < "$work/erl")
echo "| SIGKILLed node detected, ms | $s | – | $e | – | $(ratio "$s" "$e") | – | ≤ 3000 ms |"
: > "$work/heal"
for _ in $(seq "$repeat"); do "$synodic" run --nodes 3 --cookie-file "$work/cookie" "$here/heal.lua" "$stall" >> "$work/heal"; done
echo "| node stopped ${stall} s back in one cluster after SIGCONT, ms | $(median < "$work/heal") | – | – | – | – | – | ≤ 5000 ms |"
line=$("$synodic" run --nodes "$big" --cookie-file "$work/cookie" "$here/idle.lua")
echo "| $big local nodes form a cluster, s | $(field "$line" formed_s) | – | – | – | – | – | ≤ 5 s (32 nodes) |"
echo "| idle node RSS, MB | $(field "$line" max_idle_rss_mb) | – | – | – | – | – | ≤ 20 MB |"
# The floor: the same round trip between two bare C processes.
cc -O2 "$here/pingpong.c" -o "$work/pingpong"
echo
echo "| ping-pong floor (bare C, loopback TCP, 32 bytes) | µs | Synodic ÷ it | goal |"
echo "|---|---|---|---|"
for how in spin block; do
  bare=$(for _ in $(seq "$repeat"); do "$work/pingpong" "$how" "$n_pingpong" | cut -d= -f2; done | median)
  echo "| $( [ "$how" = spin ] && echo "both sides spinning" || echo "both sides blocking in recv" ) | $bare | $(ratio "$syn_pingpong" "$bare") | $( [ "$how" = spin ] && echo "≤ 2" || echo "–" ) |"
done
