"""A load client that costs the cores as little as it can, the same for every server: one process, one thread, one
asyncio loop (uvloop when installed), ``concurrency`` keep-alive connections to 127.0.0.1, each sending its next
request when the last one's answer is read. Request bodies are made before the clock starts; an answer is read as
bytes (status line, headers, a Content-Length or chunked body) and never parsed as JSON. Every cell is bounded in
requests and in seconds, and reports the client's own CPU time (``time.process_time``) beside the wall clock, so a
table can say how much of the two cores the client took."""

from __future__ import annotations

import asyncio
import time


def post_request(path: str, body: bytes, host: str = "127.0.0.1") -> bytes:
    """The bytes of one HTTP/1.1 POST of a JSON body on a keep-alive connection."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode("ascii") + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """(status, body) of one HTTP/1.1 response."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length, chunked = None, False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if length is not None:
        return status, await reader.readexactly(length)
    if not chunked:
        return status, b""
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # the empty trailer
            return status, b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


async def _cell(port: int, requests: list[bytes], concurrency: int, seconds: float, max_requests: int) -> dict:
    latencies: list[float] = []
    errors = [0]
    sent = [0]
    deadline = time.perf_counter() + seconds

    async def worker(seed: int) -> None:
        reader = writer = None
        n = seed
        while time.perf_counter() < deadline and sent[0] < max_requests:
            sent[0] += 1
            payload = requests[n % len(requests)]
            n += concurrency
            start = time.perf_counter()
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(payload)
                status, _ = await asyncio.wait_for(read_response(reader), 120)
                ok = status == 200
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, ValueError):
                ok = False
                if writer is not None:
                    writer.close()
                reader = writer = None
            if ok:
                latencies.append(time.perf_counter() - start)
            else:
                errors[0] += 1
        if writer is not None:
            writer.close()

    began, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker(k) for k in range(concurrency)))
    elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    latencies.sort()

    def pick(q: float) -> float:
        return 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else float("nan")

    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "errors": errors[0],
        "seconds": elapsed,
        "req_s": len(latencies) / elapsed,
        "p50_ms": pick(0.5),
        "p99_ms": pick(0.99),
        "client_cpu": cpu / elapsed,  # cores the client kept busy, on average
    }


def new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


def run_cell(port: int, requests: list[bytes], concurrency: int, seconds: float, max_requests: int) -> dict:
    """``concurrency`` connections sending ``requests`` (cycled) for ``seconds`` or ``max_requests`` in all:
    requests/s, p50/p99 ms, errors and the client's CPU (cores)."""
    loop = new_loop()
    try:
        return loop.run_until_complete(_cell(port, requests, concurrency, seconds, max_requests))
    finally:
        loop.close()
