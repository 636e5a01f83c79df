#!/usr/bin/env python3
"""A proxy that delays what it forwards, TCP and UDP alike: bench/skel's
stand-in for a slow link between two nodes (a node started with
--advertise 127.0.0.1:PORT is reached through it).

usage: delay_proxy.py PORT TARGET_PORT DELAY_MS   (all on 127.0.0.1)
       delay_proxy.py --route PORT DELAY_MS

Every chunk of bytes and every datagram goes on DELAY_MS after it arrived,
in order; the link's bandwidth is not limited on purpose.

With --route (TCP only), each connection names its target itself: its
first two bytes are the target port, big-endian (bench/alua-apps's
delay_connect.so, preloaded into MPI's ranks, writes them).
"""
import asyncio
import socket
import sys

HOST = "127.0.0.1"


async def forward(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def send():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                writer.close()
                return
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(send())
    try:
        while True:
            data = await reader.read(1 << 16)
            await queue.put((loop.time() + delay, data))
            if not data:
                break
    except ConnectionError:
        await queue.put((loop.time(), b""))
    await sender


async def connection(inbound_r, inbound_w, target, delay):
    try:
        if target is None:
            target = int.from_bytes(await inbound_r.readexactly(2), "big")
        outbound_r, outbound_w = await asyncio.open_connection(HOST, target)
    except (OSError, asyncio.IncompleteReadError):
        inbound_w.close()
        return
    for w in (inbound_w, outbound_w):
        w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    await asyncio.gather(forward(inbound_r, outbound_w, delay), forward(outbound_r, inbound_w, delay), return_exceptions=True)


class Datagrams(asyncio.DatagramProtocol):
    def __init__(self, target, delay):
        self.target, self.delay = target, delay
        self.out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def datagram_received(self, data, _addr):
        asyncio.get_running_loop().call_later(self.delay, self.out.sendto, data, (HOST, self.target))


async def main():
    if sys.argv[1] == "--route":
        port, target, delay = int(sys.argv[2]), None, float(sys.argv[3]) / 1000
    else:
        port, target, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000
        await asyncio.get_running_loop().create_datagram_endpoint(lambda: Datagrams(target, delay), local_addr=(HOST, port))
    server = await asyncio.start_server(lambda r, w: connection(r, w, target, delay), HOST, port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
