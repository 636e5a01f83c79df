#!/usr/bin/env bash
# bench/alua: events per second for code-chunk messages (alua.send) against
# plain messages (synodic.send) between two agents, and the cost of one event
# split into compiling (load) and running it. No goal yet: measured and
# explained (see README.md here). --quick is the CI smoke.
# usage: bench/alua/run.sh [--quick] [N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
n=200000
case "${1:-}" in
  --quick) n=20000 ;;
  -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
  "") ;;
  *) n="$1" ;;
esac
prepare
"$synodic" run "$here/events.lua" "$n"
