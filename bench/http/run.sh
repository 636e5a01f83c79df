#!/usr/bin/env bash
# bench/http: Synodic's HTTP server against Yaws (Erlang) and nginx with its
# Lua module (LuaJIT), side by side in one run, on this machine, the load
# generator (wrk, ab) on the same cores as the servers. Prints markdown
# tables of medians:
#   page     the luaproc paper's experiment: a dynamic page listing the
#            numbers 1 to 5,000 (examples/net/page_server.lua; a .yaws page
#            for Yaws, default configuration; content_by_lua_block for
#            nginx, 2 workers), at concurrency 1, 10, 100, 500, 1000:
#            requests/s and p99 latency with wrk (keep-alive), requests/s
#            with ab (a connection per request, as the paper measured);
#            Synodic ÷ Yaws and Synodic ÷ nginx
#   hello    the I/O path alone: 13 bytes with keep-alive, against nginx
#            serving the same bytes (`return 200`)
#   memory   resident memory per idle keep-alive connection at 10,000
#            connections (1,000 with --quick), its process included
#   workers  Synodic alone: worker threads 2, 4, 8 against a process per
#            connection or 100 to 800 pre-created processes (pool)
# --quick runs short and few (the CI smoke): concurrency 1, 10, 100.
# --only LIST runs only those tables (comma-separated: page,hello,memory,workers).
# usage: bench/http/run.sh [--quick] [--repeat R] [--seconds S] [--only LIST]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
repeat=3
seconds=3
levels="1 10 100 500 1000"
idle=10000
pools="spawn 100 200 400 800"
workers_list="2 4 8"
only=",page,hello,memory,workers,"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) repeat=1; seconds=1; levels="1 10 100"; idle=1000; pools="spawn 100"; workers_list="2" ;;
    --repeat) repeat="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --only) only=",$2,"; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
need "apt-get install wrk" wrk
need "apt-get install apache2-utils" ab
need "apt-get install yaws" yaws
need "apt-get install nginx-light libnginx-mod-http-lua" nginx
need "apt-get install python3" python3
[ -e /usr/lib/nginx/modules/ngx_http_lua_module.so ] || { echo "run.sh: nginx's Lua module not found (apt-get install libnginx-mod-http-lua)" >&2; exit 1; }
prepare

bench_cleanup() {
  [ -n "${syn_pid:-}" ] && kill "$syn_pid" 2>/dev/null || true
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  yaws --stop --id "bench$$" >/dev/null 2>&1 || true
}

want() { case "$only" in *",$1,"*) return 0 ;; esac; return 1; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "–" }'; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "run.sh: nothing listens on $1" >&2; exit 1; }

# Synodic: the paper's page server, on WORKERS threads with POOL ("spawn":
# a process per connection).
syn_start() {
  local workers=$1 pool=$2
  syn_port=$(free_port)
  if [ "$pool" = spawn ]; then
    "$synodic" run --workers "$workers" "$root/examples/net/page_server.lua" "$syn_port" >/dev/null 2>>"$work/synodic.err" &
  else
    "$synodic" run --workers "$workers" "$root/examples/net/page_server.lua" "$syn_port" "$pool" >/dev/null 2>>"$work/synodic.err" &
  fi
  syn_pid=$!
  wait_port "$syn_port"
}
syn_stop() { kill "$syn_pid" 2>/dev/null; wait "$syn_pid" 2>/dev/null || true; syn_pid=; }

# Yaws, default configuration, the same page as a .yaws page.
yaws_port=$(free_port)
mkdir -p "$work/www" "$work/yaws-logs"
printf '%s' '<erl>
out(_A) -> {content, "text/html", [[integer_to_list(I), "\n"] || I <- lists:seq(1, 5000)]}.
</erl>' > "$work/www/page.yaws"
cat > "$work/yaws.conf" <<EOF
logdir = $work/yaws-logs
<server localhost>
  port = $yaws_port
  listen = 127.0.0.1
  docroot = $work/www
</server>
EOF
yaws --daemon --conf "$work/yaws.conf" --id "bench$$" >/dev/null 2>&1
wait_port "$yaws_port"

# nginx with its Lua module, 2 workers: the same page, and the 13 bytes.
nginx_port=$(free_port)
cat > "$work/nginx.conf" <<EOF
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
worker_rlimit_nofile 20000;
events { worker_connections 16384; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$nginx_port backlog=4096;
    location = /page {
      default_type text/html;
      content_by_lua_block {
        local t = {}
        for i = 1, 5000 do t[i] = i end
        t[5001] = ""
        ngx.print(table.concat(t, "\n"))
      }
    }
    location = /hello { default_type text/plain; return 200 "hello world!\n"; }
  }
}
EOF
nginx -c "$work/nginx.conf" -p "$work" 2>/dev/null
wait_port "$nginx_port"

# The three pages must be the same bytes.
syn_start 2 spawn
for url in "http://127.0.0.1:$syn_port/" "http://127.0.0.1:$yaws_port/page.yaws" "http://127.0.0.1:$nginx_port/page"; do
  sum=$(python3 -c 'import sys, urllib.request, hashlib; print(hashlib.sha1(urllib.request.urlopen(sys.argv[1]).read()).hexdigest())' "$url")
  [ -z "${first_sum:-}" ] && first_sum=$sum
  [ "$sum" = "$first_sum" ] || { echo "run.sh: $url serves another page" >&2; exit 1; }
done

# wrk_run URL CONNECTIONS -> "requests/s p99_ms"
wrk_run() {
  local threads=2
  [ "$2" -lt 2 ] && threads=1
  wrk -t"$threads" -c"$2" -d"${seconds}s" --latency "$1" 2>/dev/null | awk '
    /Requests\/sec/ { rps = $2 }
    /^ +99%/ { v = $2; if (v ~ /us$/) { sub(/us/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms/, "", v) } else if (v ~ /s$/) { sub(/s/, "", v); v *= 1000 }; p99 = v }
    END { printf "%s %s\n", rps, p99 }'
}
# ab_run URL CONNECTIONS -> requests/s (a connection per request)
ab_run() {
  local n=$(( $2 * 20 ))
  [ "$n" -lt 2000 ] && n=2000
  ab -q -n "$n" -c "$2" "$1" 2>/dev/null | awk '/Requests per second/ { print $4 }'
}

if want page; then
echo "## page: numbers 1 to 5,000 (median of $repeat, ${seconds} s each; wrk with keep-alive, ab without)"
echo
echo "| concurrency | Synodic req/s | Yaws req/s | nginx+Lua req/s | Synodic ÷ Yaws | Synodic ÷ nginx | p99 ms Synodic / Yaws / nginx | ab req/s Synodic / Yaws / nginx | ab Synodic ÷ Yaws |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in $levels; do
  declare -A rps=() p99=() abr=()
  for _ in $(seq "$repeat"); do
    for server in syn yaws nginx; do
      case $server in
        syn) url="http://127.0.0.1:$syn_port/" ;;
        yaws) url="http://127.0.0.1:$yaws_port/page.yaws" ;;
        nginx) url="http://127.0.0.1:$nginx_port/page" ;;
      esac
      read -r r p < <(wrk_run "$url" "$c")
      rps[$server]+="$r "
      p99[$server]+="$p "
      abr[$server]+="$(ab_run "$url" "$c") "
    done
  done
  m() { echo "$1" | tr ' ' '\n' | grep . | median; }
  s_r=$(m "${rps[syn]}"); y_r=$(m "${rps[yaws]}"); n_r=$(m "${rps[nginx]}")
  s_a=$(m "${abr[syn]}"); y_a=$(m "${abr[yaws]}"); n_a=$(m "${abr[nginx]}")
  echo "| $c | $s_r | $y_r | $n_r | $(ratio "$s_r" "$y_r") | $(ratio "$s_r" "$n_r") | $(m "${p99[syn]}") / $(m "${p99[yaws]}") / $(m "${p99[nginx]}") | $s_a / $y_a / $n_a | $(ratio "$s_a" "$y_a") |"
  unset rps p99 abr
done
echo
fi

if want hello; then
echo "## hello: 13 bytes with keep-alive, 100 connections (median of $repeat)"
echo
s_h=""; n_h=""
for _ in $(seq "$repeat"); do
  read -r r _ < <(wrk_run "http://127.0.0.1:$syn_port/hello" 100); s_h+="$r "
  read -r r _ < <(wrk_run "http://127.0.0.1:$nginx_port/hello" 100); n_h+="$r "
done
s_h=$(echo "$s_h" | tr ' ' '\n' | grep . | median); n_h=$(echo "$n_h" | tr ' ' '\n' | grep . | median)
echo "| server | req/s |"
echo "|---|---|"
echo "| Synodic | $s_h |"
echo "| nginx | $n_h |"
echo "| Synodic ÷ nginx | $(ratio "$s_h" "$n_h") |"
echo
fi

if want memory; then
echo "## memory: $idle idle keep-alive connections"
echo
# A fresh server: one that served the tables above gives back their
# garbage meanwhile, and its resident memory would shrink under the count.
[ -n "${syn_pid:-}" ] && syn_stop
syn_start 2 spawn
per=$(python3 - "$syn_port" "$idle" "$syn_pid" <<'EOF'
import socket, sys, time, resource
port, n, pid = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"): return int(line.split()[1])
before = rss()
conns = []
for i in range(n):
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
    conns.append(c)
for c in conns:
    data = b""
    while not data.endswith(b"hello world!\n"):
        d = c.recv(4096)
        if not d: raise SystemExit("a connection closed")
        data += d
time.sleep(0.5)
print((rss() - before) * 1024 // n)
EOF
)
echo "| Synodic bytes per idle connection | goal |"
echo "|---|---|"
echo "| $per | ≤ 8192 |"
syn_stop
echo
fi

if want workers; then
[ -n "${syn_pid:-}" ] && syn_stop
echo "## workers and processes: Synodic's page at 100 connections (req/s, median of $repeat)"
echo
printf "| workers |"; for p in $pools; do printf " %s |" "$([ "$p" = spawn ] && echo "a process per connection" || echo "pool of $p")"; done; echo
printf "|---|"; for _ in $pools; do printf -- "---|"; done; echo
for w in $workers_list; do
  printf "| %s |" "$w"
  for p in $pools; do
    syn_start "$w" "$p"
    runs=""
    for _ in $(seq "$repeat"); do read -r r _ < <(wrk_run "http://127.0.0.1:$syn_port/" 100); runs+="$r "; done
    syn_stop
    printf " %s |" "$(echo "$runs" | tr ' ' '\n' | grep . | median)"
  done
  echo
done
fi
