#!/usr/bin/env bash
# bench/startup: `synodic` standing in for `lua` (SPEC §8), against
# lua5.4 in the same run: the wall time of a whole process that does
# nothing (`-e ''`), and of one that runs a small script, run A B A B ...
# so that both see the same machine. Prints medians and the ratio
# Synodic ÷ lua5.4 (the goal: at most 1.5).
# --quick: 10 pairs (the CI smoke); default 100.
# usage: bench/startup/run.sh [--quick] [--runs N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
runs=100
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) runs=10 ;;
    --runs) runs="$2"; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
need "apt-get install lua5.4" lua5.4 python3
prepare
printf 'local t = {}\nfor i = 1, 1000 do t[i] = tostring(i) end\nprint(#table.concat(t))\n' > "$work/small.lua"

# pairs NAME ARGS...: runs synodic ARGS and lua5.4 ARGS in turn, $runs times;
# prints a table row with both medians (ms) and the ratio.
pairs() {
  local name=$1
  shift
  python3 - "$runs" "$synodic" "$@" <<'PY'
import subprocess, sys, time, statistics
runs, synodic, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
def once(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t
a, b, r = [], [], []
for _ in range(runs):
    x, y = once([synodic] + args), once(["lua5.4"] + args)
    a.append(x); b.append(y); r.append(x / y)
print(f"{statistics.median(a) * 1e3:.2f} | {statistics.median(b) * 1e3:.2f} | {statistics.median(r):.2f}")
PY
}

echo "| command | synodic ms | lua5.4 ms | synodic ÷ lua5.4 |"
echo "|---|---|---|---|"
echo "| -e '' | $(pairs empty -e '') |"
echo "| small script | $(pairs small "$work/small.lua") |"
