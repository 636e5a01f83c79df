"""A dashboard's page, as a browser would load it, without a browser.

  watch.py watch URL      keeps a page open: the live stream (/api/events),
                          and the processes and spaces views fetched every
                          second, until killed
  watch.py refresh URL N  times N refreshes of the heaviest view (the top 50
                          processes, the nodes and the spaces) and prints
                          refresh_s=<median> refresh_max_s=<max>
Waits up to 30 s for the dashboard to answer first. A URL of - is read from
standard input, after printing `waiting` (so that Python's start can come
before the run it watches)."""
import http.client, statistics, sys, threading, time, urllib.parse

def connect(url):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)

def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        raise SystemExit(f"watch.py: {path}: {r.status} {body[:200]!r}")
    return body

def wait_up(url):
    deadline = time.time() + 30
    while True:
        try:
            return get(connect(url), "/api/")
        except (OSError, http.client.HTTPException):
            if time.time() > deadline:
                raise SystemExit(f"watch.py: no dashboard at {url}")
            time.sleep(0.1)

def stream(url):
    try:
        conn = connect(url)
        conn.request("GET", "/api/events")
        r = conn.getresponse()
        while r.readline():
            pass
    except (OSError, http.client.HTTPException):
        pass

def refresh(conn):
    get(conn, "/api/processes?by=cpu&limit=50")
    get(conn, "/api/nodes")
    get(conn, "/api/spaces")

def main():
    mode, url = sys.argv[1], sys.argv[2]
    if url == "-":
        print("waiting", flush=True)
        url = sys.stdin.readline().strip()
    wait_up(url)
    if mode == "watch":
        threading.Thread(target=stream, args=(url,), daemon=True).start()
        conn = connect(url)
        try:
            while True:
                refresh(conn)
                time.sleep(1)
        except (OSError, http.client.HTTPException, SystemExit):
            return  # the run ended, and its dashboard with it
    times = []
    conn = connect(url)
    for _ in range(int(sys.argv[3])):
        t = time.perf_counter()
        refresh(conn)
        times.append(time.perf_counter() - t)
    print(f"refresh_s={statistics.median(times):.3f} refresh_max_s={max(times):.3f}")

if __name__ == "__main__":
    main()
