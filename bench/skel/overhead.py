"""bench/skel, task overhead of Ray and Dask, as overhead.lua measures
Synodic's: N empty tasks submitted at once and gathered, a single task's
round trip, and a two-stage chain passing 1 MB between stages, each on a
local cluster of two worker processes (this machine's cores).

usage: python overhead.py ray|dask N
Prints "empty_us=... roundtrip_us=... chain_ms=...".
"""
import sys
import time


def noop(*_):
    return None


def make(*_):
    return bytes(1 << 20)


def size(b):
    return len(b)


def measure(submit, get, n):
    for _ in range(200):
        get(submit(noop))
    t = time.perf_counter()
    futures = [submit(noop) for _ in range(n)]
    for f in futures:
        get(f)
    empty = (time.perf_counter() - t) / n
    trips = max(n // 10, 100)
    t = time.perf_counter()
    for _ in range(trips):
        get(submit(noop))
    roundtrip = (time.perf_counter() - t) / trips
    chains = max(n // 100, 20)
    for _ in range(20):
        get(submit(size, submit(make)))
    t = time.perf_counter()
    for _ in range(chains):
        assert get(submit(size, submit(make))) == 1 << 20
    chain = (time.perf_counter() - t) / chains
    print(f"empty_us={empty * 1e6:.2f} roundtrip_us={roundtrip * 1e6:.2f} chain_ms={chain * 1e3:.3f}", flush=True)


def ray_main(n):
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    remote = {f: ray.remote(f) for f in (noop, make, size)}
    measure(lambda f, *args: remote[f].remote(*args), ray.get, n)
    ray.shutdown()


def dask_main(n):
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        measure(lambda f, *args: client.submit(f, *args, pure=False), lambda fut: fut.result(), n)


if __name__ == "__main__":
    {"ray": ray_main, "dask": dask_main}[sys.argv[1]](int(sys.argv[2]))
