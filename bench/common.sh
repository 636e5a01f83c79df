# bench/common.sh: what every bench/*/run.sh starts with, sourced once it
# has set `here` (its own folder). It sets `root` (the repository), and
# `prepare` builds Synodic and makes a scratch folder; `need` checks for
# the other programs a benchmark runs beside ours.

root=$(cd "$here/../.." && pwd)

# need HINT TOOL...: stops with a one-line error at the first TOOL that is
# not installed (HINT says how to install it).
need() {
  local hint=$1 tool
  shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool not found ($hint)" >&2; exit 1; }
  done
}

# prepare: builds the release binary and sets `synodic` to it, and `work`
# to a scratch folder removed at exit, after `bench_cleanup` if the script
# defines one.
prepare() {
  (cd "$root" && cargo build --release -q)
  synodic="$root/target/release/synodic"
  work=$(mktemp -d)
  trap 'if declare -F bench_cleanup >/dev/null; then bench_cleanup; fi; rm -rf "$work"' EXIT
}

# await_exit PID [SECONDS]: waits (30 s by default) for a background
# process of this script to end, so that the next run has the processors
# to itself; one still running then is killed, and named.
await_exit() {
  local pid=$1 tries=$(( ${2:-30} * 20 ))
  while [ "$tries" -gt 0 ] && kill -0 "$pid" 2>/dev/null; do sleep 0.05; tries=$((tries - 1)); done
  if kill -0 "$pid" 2>/dev/null; then
    echo "run.sh: process $pid still running after ${2:-30} s; killed" >&2
    kill -9 "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

# port_base [SPAN]: the first of SPAN consecutive ports (20 by default)
# for this run's listeners, chosen from its process id below the
# kernel's range for outgoing connections (32768 and up here), where a
# port some connection on the machine held made a listener fail with
# "address already in use".
port_base() {
  local span=${1:-20} low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  echo $((10000 + $$ % (low - 10000 - span)))
}

# wait_until SECONDS WHAT COMMAND...: runs COMMAND every 50 ms until it
# succeeds; after SECONDS, says that WHAT did not happen and ends the
# script (a node or a proxy that never comes up must not hang the run).
wait_until() {
  local seconds=$1 what=$2 tries=$(( $1 * 20 ))
  shift 2
  until "$@" 2>/dev/null; do
    tries=$((tries - 1))
    if [ "$tries" -le 0 ]; then
      echo "run.sh: $what: not after $seconds s" >&2
      exit 1
    fi
    sleep 0.05
  done
}

# listening PORT: whether something accepts connections on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# epmd_has NAME: whether Erlang's port mapper lists node NAME.
epmd_has() { epmd -names 2>/dev/null | grep -q "$1"; }
