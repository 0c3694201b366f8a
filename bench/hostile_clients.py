#!/usr/bin/env python3
"""The clients of bench/hostile_load.sh, one role per process, so that one role's busy event
loop cannot delay another role's clock (a /health probe timed on the loop that also drives 500
streams would measure Python, not the server).

  hostile_clients.py good N     N well-behaved clients, each with its own key, streaming
                                completions back to back; per request: status, TTFT, TPOT.
  hostile_clients.py hostile N  N hostile clients in six kinds, N/6 each (see HOSTILE_KINDS).
  hostile_clients.py health     GET /health every 20 ms on a fresh connection; each latency.
  hostile_clients.py report DIR compares DIR/baseline_*.json with DIR/mixed_*.json: prints the
                                table, exits 1 when a target of the issue is missed.

Common flags: --host, --port, --seconds (how long new requests start), --out FILE (JSON).
Only the standard library: raw HTTP/1.1 over asyncio, so that every byte a hostile client sends
(or does not send) is under its control.
"""
import argparse
import asyncio
import json
import os
import resource
import socket
import time

GOOD_BODY = json.dumps({"prompt": "Once upon a time", "max_tokens": 64, "stream": True,
                        "ignore_eos": True, "temperature": 0}).encode()
SLOW_READER_BODY = json.dumps({"prompt": "Once upon a time", "max_tokens": 128,
                               "stream": True, "ignore_eos": True}).encode()
SMALL_BODY = json.dumps({"prompt": "Once", "max_tokens": 1}).encode()
# Hostile clients pause between attempts so that the attacker's own CPU (it shares the machine
# with the server) does not decide the result; each kind still keeps every one of its
# connections busy or reopens it at once.
HOSTILE_PAUSE_S = 0.2


def request_head(method, path, host, key=None, length=None, close=True):
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    if key is not None:
        lines.append(f"Authorization: Bearer {key}")
    if length is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {length}"]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def read_status(reader):
    line = await reader.readline()
    parts = line.split()
    status = int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else 0
    while True:  # the headers
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            return status


async def good_request(args, key):
    """One streamed completion; TTFT and TPOT from the arrival times of its SSE events."""
    start = time.monotonic()
    reader, writer = await asyncio.open_connection(args.host, args.port)
    try:
        writer.write(request_head("POST", "/v1/completions", args.host, key, len(GOOD_BODY))
                     + GOOD_BODY)
        await writer.drain()
        status = await read_status(reader)
        arrivals = []
        while status == 200:
            line = await reader.readline()
            if not line or line.startswith(b"data: [DONE]"):
                break
            if line.startswith(b"data: "):
                arrivals.append(time.monotonic())
    finally:
        writer.close()
    record = {"status": status}
    if arrivals:
        record["ttft"] = arrivals[0] - start
    if len(arrivals) >= 2:
        record["tpot"] = (arrivals[-1] - arrivals[0]) / (len(arrivals) - 1)
        record["events"] = len(arrivals)
    return record


async def good_client(args, index, deadline, records):
    key = f"sk-good-{index}"
    while time.monotonic() < deadline:
        try:
            records.append(await good_request(args, key))
        except (OSError, asyncio.IncompleteReadError, ValueError) as error:
            records.append({"status": 0, "error": type(error).__name__})
            await asyncio.sleep(0.1)


async def exchange(args, head, body=b"", timeout=30.0):
    """Sends head + body, returns the status (0 when the server closed without one)."""
    reader, writer = await asyncio.open_connection(args.host, args.port)
    try:
        writer.write(head + body)
        await writer.drain()
        return await asyncio.wait_for(read_status(reader), timeout)
    finally:
        writer.close()


async def slow_reader(args, index):
    """A valid long stream read 16 bytes a second through a 4 KiB receive buffer: the server's
    writes stall, and it must not stall anyone else."""
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    try:
        await loop.sock_connect(sock, (args.host, args.port))
        head = request_head("POST", "/v1/completions", args.host, f"sk-slow-{index}",
                            len(SLOW_READER_BODY))
        await loop.sock_sendall(sock, head + SLOW_READER_BODY)
        first = b""
        while True:
            chunk = await asyncio.wait_for(loop.sock_recv(sock, 16), 120)
            if not chunk:
                break
            first = first or chunk
            await asyncio.sleep(1.0)
            if time.monotonic() > args.deadline:
                break
        return int(first.split()[1]) if first.startswith(b"HTTP/1.1 ") else 0
    finally:
        sock.close()


async def slowloris(args, index):
    """Headers one byte a second: the header timeout must close it."""
    reader, writer = await asyncio.open_connection(args.host, args.port)
    head = request_head("GET", "/v1/models", args.host, f"sk-slow-{index}")
    try:
        for byte in head:
            writer.write(bytes([byte]))
            await writer.drain()
            if reader.at_eof() or time.monotonic() > args.deadline:
                break
            await asyncio.sleep(1.0)
        return await asyncio.wait_for(read_status(reader), 5)
    finally:
        writer.close()


async def slow_body(args, index):
    """A valid key, then a body of 1000 bytes sent a byte every two seconds: the read timeout
    must close it."""
    reader, writer = await asyncio.open_connection(args.host, args.port)
    try:
        writer.write(request_head("POST", "/v1/completions", args.host, f"sk-slow-{index}", 1000))
        await writer.drain()
        while not reader.at_eof() and time.monotonic() < args.deadline:
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(2.0)
        return await asyncio.wait_for(read_status(reader), 5)
    finally:
        writer.close()


async def oversize_body(args, index):
    """Announces 8 MiB (twice --max-body-bytes): 413 from the headers alone."""
    return await exchange(args, request_head("POST", "/v1/completions", args.host,
                                             f"sk-slow-{index}", 8 << 20))


async def bad_key(args, index):
    """A wrong key and a 4 MiB body announced: 401 without the body being read."""
    return await exchange(args, request_head("POST", "/v1/completions", args.host,
                                             f"sk-wrong-{index}", 4 << 20))


async def over_limit(args, index):
    """Everyone shares one key, far past its rate limit: 429."""
    return await exchange(args, request_head("POST", "/v1/completions", args.host, "sk-hammer",
                                             len(SMALL_BODY)), SMALL_BODY)


HOSTILE_KINDS = {"slow_reader": slow_reader, "slowloris": slowloris, "slow_body": slow_body,
                 "oversize_body": oversize_body, "bad_key": bad_key, "over_limit": over_limit}


async def hostile_client(args, kind, index, counts):
    attack = HOSTILE_KINDS[kind]
    while time.monotonic() < args.deadline:
        try:
            status = await attack(args, index)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError):
            status = 0  # the server closed on it: what a timeout looks like from here
        key = f"{kind} {status}"
        counts[key] = counts.get(key, 0) + 1
        await asyncio.sleep(HOSTILE_PAUSE_S)


async def health_probe(args, latencies, failures):
    head = request_head("GET", "/health", args.host)
    while time.monotonic() < args.deadline:
        start = time.monotonic()
        try:
            status = await exchange(args, head, timeout=5.0)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            status = 0
        elapsed = time.monotonic() - start
        latencies.append(elapsed)
        if status != 200:
            failures.append(status)
        await asyncio.sleep(max(0.0, 0.02 - elapsed))


async def main_async(args):
    args.deadline = time.monotonic() + args.seconds
    result = {"role": args.role}
    if args.role == "good":
        records = []
        await asyncio.gather(*(good_client(args, i, args.deadline, records)
                               for i in range(args.count)))
        result["requests"] = records
    elif args.role == "hostile":
        counts = {}
        kinds = list(HOSTILE_KINDS)
        await asyncio.gather(*(hostile_client(args, kinds[i % len(kinds)], i, counts)
                               for i in range(args.count)))
        counts["_seconds"] = time.monotonic() - args.deadline + args.seconds
        result["statuses"] = counts
    else:
        latencies, failures = [], []
        await health_probe(args, latencies, failures)
        result["latencies"] = latencies
        result["failures"] = failures
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(result, out)


def percentile(values, share):
    """Nearest rank, as base/percentile.h does for the C++ benchmarks."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(share * len(ordered) + 0.5) - 1))]


def server_cpu_seconds(directory, phase):
    """CPU seconds each server thread group used during the phase (from /proc ticks)."""
    ticks_per_second = float(os.environ.get("TICKS_PER_SECOND", "100"))
    def load(edge):
        totals = {}
        with open(f"{directory}/{phase}_ticks_{edge}.txt", encoding="utf-8") as source:
            for line in source:
                name, ticks = line.rsplit(" ", 1)
                group = name.rstrip("0123456789").rstrip("-") if name.startswith("tally-") else "io"
                totals[group] = totals.get(group, 0) + int(ticks)
        return totals
    start, end = load("start"), load("end")
    return {group: (ticks - start.get(group, 0)) / ticks_per_second
            for group, ticks in end.items()}


def phase_summary(directory, phase):
    def load(role):
        with open(f"{directory}/{phase}_{role}.json", encoding="utf-8") as source:
            return json.load(source)
    good = load("good")["requests"]
    health = load("health")
    ok = [r for r in good if r["status"] == 200 and "tpot" in r]
    statuses = {}
    for r in good:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    return {"good_requests": len(good), "good_statuses": statuses,
            "tpot_p50_ms": 1000 * percentile([r["tpot"] for r in ok], 0.5),
            "tpot_p99_ms": 1000 * percentile([r["tpot"] for r in ok], 0.99),
            "ttft_p50_s": percentile([r["ttft"] for r in ok], 0.5),
            "health_probes": len(health["latencies"]), "health_failures": len(health["failures"]),
            "health_p50_ms": 1000 * percentile(health["latencies"], 0.5),
            "health_p99_ms": 1000 * percentile(health["latencies"], 0.99),
            "health_max_ms": 1000 * max(health["latencies"], default=float("nan")),
            "cpu_s": server_cpu_seconds(directory, phase)}


def report(directory):
    base, mixed = phase_summary(directory, "baseline"), phase_summary(directory, "mixed")
    with open(f"{directory}/mixed_hostile.json", encoding="utf-8") as source:
        hostile = json.load(source)["statuses"]
    print(f"{'':28}{'baseline':>12}{'mixed':>12}")
    for name in ["good_requests", "tpot_p50_ms", "tpot_p99_ms", "ttft_p50_s", "health_probes",
                 "health_failures", "health_p50_ms", "health_p99_ms", "health_max_ms"]:
        print(f"{name:28}{base[name]:>12.4g}{mixed[name]:>12.4g}")
    for group in sorted(set(base["cpu_s"]) | set(mixed["cpu_s"])):
        print(f"{'cpu s, ' + group + ' threads':28}{base['cpu_s'].get(group, 0):>12.4g}"
              f"{mixed['cpu_s'].get(group, 0):>12.4g}")
    print(f"{'good statuses':28}{str(base['good_statuses']):>12} {mixed['good_statuses']}")
    seconds = hostile.pop("_seconds", float("nan"))
    print(f"hostile attempts in {seconds:.0f}s by kind and status: "
          + ", ".join(f"{k}: {v}" for k, v in sorted(hostile.items()))
          + f" ({sum(hostile.values()) / seconds:.0f}/s)")
    ratio = mixed["tpot_p50_ms"] / base["tpot_p50_ms"]
    misses = []
    if not mixed["health_p99_ms"] <= 100:
        misses.append(f"/health p99 {mixed['health_p99_ms']:.1f} ms > 100 ms")
    if not ratio <= 1.5:
        misses.append(f"TPOT p50 {ratio:.2f}x of the baseline > 1.5x")
    for phase, summary in (("baseline", base), ("mixed", mixed)):
        if set(summary["good_statuses"]) != {200}:
            misses.append(f"{phase}: a well-behaved client got {summary['good_statuses']}")
        if summary["health_failures"]:
            misses.append(f"{phase}: {summary['health_failures']} /health probes failed")
    print(f"TPOT p50 mixed / baseline: {ratio:.2f}x (target <= 1.5x); "
          f"/health p99 under attack: {mixed['health_p99_ms']:.1f} ms (target <= 100 ms)")
    with open(f"{directory}/summary.json", "w", encoding="utf-8") as out:
        json.dump({"baseline": base, "mixed": mixed, "hostile": hostile,
                   "tpot_ratio": ratio, "misses": misses}, out, indent=1)
    for miss in misses:
        print(f"MISSED: {miss}")
    return 1 if misses else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=["good", "hostile", "health", "report"])
    parser.add_argument("count", nargs="?", default="1", help="clients, or report's directory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.role == "report":
        raise SystemExit(report(args.count))
    args.count = int(args.count)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = args.count * 2 + 64
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
