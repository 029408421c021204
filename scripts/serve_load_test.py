#!/usr/bin/env python3
"""Bounded load test of gattn serve on loopback (Python's standard library only).

Starts `gattn serve` on a free port (or uses --url), sends a fixed number of completion requests
from N concurrent clients, stops the server, and reports throughput, latency percentiles and
errors. Exits 1 if any request failed.

  scripts/serve_load_test.py --gattn build/gattn --checkpoint runs/tiny --clients 4 --requests 32
"""
import argparse
import http.client
import json
import socket
import subprocess
import sys
import threading
import time
from urllib.parse import urlparse

PROMPTS = ["In the beginning", "And God said", "The LORD is my shepherd", "Blessed is the man",
           "Praise ye the LORD", "O give thanks", "For God so loved", "Let there be light"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_server(proc):
    """SIGTERM, then SIGKILL if the server has not exited within 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_healthy(host, port, proc, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            sys.exit(f"load test: gattn serve exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection(host, port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.1)
    sys.exit("load test: the server did not become healthy")


def one_request(host, port, body, stream, timeout):
    """Returns (seconds, seconds to the first token or None, completion tokens, error or None)."""
    t0 = time.monotonic()
    try:
        c = http.client.HTTPConnection(host, port, timeout=timeout)
        c.request("POST", "/v1/completions", json.dumps(body),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            return time.monotonic() - t0, None, 0, f"HTTP {r.status}: {r.read()[:200]!r}"
        if not stream:
            data = json.loads(r.read())
            return time.monotonic() - t0, None, data["usage"]["completion_tokens"], None
        first, pieces, done = None, 0, False
        for line in r:
            if not line.startswith(b"data: "):
                continue
            payload = line[6:].strip()
            if payload == b"[DONE]":
                done = True
                break
            event = json.loads(payload)
            if "error" in event:
                return time.monotonic() - t0, first, pieces, event["error"]["message"]
            if event["choices"][0]["text"]:
                first = first or time.monotonic() - t0
                pieces += 1
        if not done:
            return time.monotonic() - t0, first, pieces, "stream ended without [DONE]"
        return time.monotonic() - t0, first, pieces, None
    except (OSError, ValueError, KeyError) as e:
        return time.monotonic() - t0, None, 0, repr(e)


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def run(args, host, port):
    lock = threading.Lock()
    next_index = [0]
    results = []

    def client():
        while True:
            with lock:
                i = next_index[0]
                if i >= args.requests:
                    return
                next_index[0] += 1
            body = {"prompt": PROMPTS[i % len(PROMPTS)], "max_tokens": args.max_tokens,
                    "temperature": args.temperature, "seed": i, "stream": args.stream}
            r = one_request(host, port, body, args.stream, args.request_timeout)
            with lock:
                results.append(r)

    t0 = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - t0, results


def report(args, wall, results):
    ok = [r for r in results if r[3] is None]
    errors = [r[3] for r in results if r[3] is not None]
    tokens = sum(r[2] for r in ok)
    latencies = [r[0] for r in ok]
    print(f"load test: {args.clients} clients, {len(results)} requests, max_tokens "
          f"{args.max_tokens}, {'streamed' if args.stream else 'not streamed'}")
    unit = "text events (streamed: not exact tokens)" if args.stream else "completion tokens"
    print(f"  wall {wall:.2f} s, {len(ok) / wall:.2f} requests/s, {tokens} {unit}, "
          f"{tokens / wall:.1f} per s")
    print("  latency s: p50 {:.3f}  p90 {:.3f}  p99 {:.3f}  max {:.3f}".format(
        percentile(latencies, 50), percentile(latencies, 90), percentile(latencies, 99),
        max(latencies) if latencies else float("nan")))
    firsts = [r[1] for r in ok if r[1] is not None]
    if firsts:
        print("  first token s: p50 {:.3f}  p90 {:.3f}  p99 {:.3f}".format(
            percentile(firsts, 50), percentile(firsts, 90), percentile(firsts, 99)))
    print(f"  errors: {len(errors)}")
    for e in errors[:5]:
        print(f"    {e}")
    return {"clients": args.clients, "requests": len(results), "errors": len(errors),
            "wall_s": wall, "tokens": tokens, "tokens_per_s": tokens / wall,
            "p50_s": percentile(latencies, 50), "p90_s": percentile(latencies, 90),
            "p99_s": percentile(latencies, 99)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gattn", default="build/gattn", help="the gattn binary")
    p.add_argument("--checkpoint", help="start gattn serve on this checkpoint")
    p.add_argument("--url", help="use a running server instead, e.g. http://127.0.0.1:8080")
    p.add_argument("--parallel", type=int, default=4, help="--parallel of the started server")
    p.add_argument("--threads", type=int, default=0, help="--threads of the started server")
    p.add_argument("--weights-dtype", choices=["f32", "bf16"], default="f32",
                   help="--weights-dtype of the started server")
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--stream", action="store_true")
    p.add_argument("--request-timeout", type=float, default=120)
    p.add_argument("--json", help="also write the figures to this file")
    args = p.parse_args()
    if bool(args.url) == bool(args.checkpoint):
        sys.exit("load test: give --checkpoint (start a server) or --url (use one)")
    proc = None
    if args.url:
        u = urlparse(args.url)
        host, port = u.hostname, u.port or 80
    else:
        host, port = "127.0.0.1", free_port()
        cmd = [args.gattn, "serve", "--checkpoint", args.checkpoint, "--host", host,
               "--port", str(port), "--parallel", str(args.parallel)]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        cmd += ["--weights-dtype", args.weights_dtype]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_healthy(host, port, proc, 60)
        wall, results = run(args, host, port)
    finally:
        if proc is not None:
            stop_server(proc)
    figures = report(args, wall, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    sys.exit(1 if figures["errors"] else 0)


if __name__ == "__main__":
    main()
