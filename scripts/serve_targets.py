#!/usr/bin/env python3
"""Issue 32's acceptance targets for gattn serve, measured on loopback (standard library only).

Each target starts its own server on a free 127.0.0.1 port and stops it at the end, also on error:
  slowloris  /health probes answered within 1 s, and decode tokens/s, while 200 connections
             trickle one header byte per second (vs the same run without them)
  prefill    p99 gap between a decoding stream's chunks while a 4,096-token prompt prefills
             (vs the same streams' p99 just before)
  prefix     time of a 1,000-token prompt (cold) vs the same 1,000 + 20 new tokens (warm)
  compare    gattn serve vs llama.cpp's llama-server on the same weights at 1, 4 and 16 clients
             (only with --llama-server and --gguf)
Prompts are random token ids from fixed seeds; temperature 0. Prints one table (target, required,
measured, MET / NOT MET); exits 1 if a target is not met.

  scripts/serve_targets.py --checkpoint runs/tiny slowloris prefill prefix --json targets.json
"""
import argparse
import contextlib
import http.client
import json
import os
import random
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from serve_load_test import free_port, percentile, stop_server, wait_healthy

HOST = "127.0.0.1"
TIMEOUT_S = 300  # any one request (the server's --timeout-s default)
RUNNING = set()  # server processes, for the watchdog
NAN = float("nan")


@contextlib.contextmanager
def server(label, argv_for_port):
    """A server on a free loopback port (yields the port) once /health answers; stopped at the
    end, also on error (then its last output is printed)."""
    port = free_port()
    argv = argv_for_port(port)
    print(f"  [{label}] {' '.join(argv)}", flush=True)
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        RUNNING.add(proc)
        try:
            try:
                wait_healthy(HOST, port, proc, 300)
            except SystemExit as e:  # how wait_healthy says it failed
                raise RuntimeError(f"{label}: {e}") from None
            yield port
        except BaseException:
            log.seek(0)
            tail = b"\n".join(log.read().splitlines()[-15:]).decode(errors="replace")
            print(f"  [{label}] the server's last output:\n{tail}")
            raise
        finally:
            stop_server(proc)
            RUNNING.discard(proc)


def gattn_server(args, label, parallel, *extra):
    return server(label, lambda port: [
        args.gattn, "serve", "--checkpoint", args.checkpoint, "--host", HOST, "--port", str(port),
        "--parallel", str(parallel), "--threads", str(args.threads), "--weights-dtype", args.dtype,
        "--kv-dtype", args.kv_dtype, *map(str, extra)])


def get_json(port, path):
    c = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        c.request("GET", path)
        return json.loads(c.getresponse().read())
    finally:
        c.close()


def complete(port, body, stop_event=None):
    """One streamed /v1/completions request. Returns a dict: sent, end, chunks (arrival times of
    the chunks with text), tokens (usage's completion_tokens), finish, error."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    out = {"sent": time.monotonic(), "chunks": [], "tokens": None, "finish": None, "error": None}
    c = http.client.HTTPConnection(HOST, port, timeout=TIMEOUT_S)
    try:
        c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            out["error"] = f"HTTP {r.status}: {r.read()[:200]!r}"
        for line in r if r.status == 200 else []:
            if stop_event is not None and stop_event.is_set():
                out["error"] = "stopped"
                break
            if not line.startswith(b"data: ") or line[6:].strip() == b"[DONE]":
                continue
            event = json.loads(line[6:])
            out["error"] = str(event["error"])[:200] if "error" in event else out["error"]
            if event.get("usage"):
                out["tokens"] = event["usage"]["completion_tokens"]
            for choice in event.get("choices") or []:
                if choice.get("text"):
                    out["chunks"].append(time.monotonic())
                out["finish"] = choice.get("finish_reason") or out["finish"]
    except (OSError, ValueError, KeyError, http.client.HTTPException) as e:
        out["error"] = repr(e)
    finally:
        c.close()
    out["end"] = time.monotonic()
    if out["tokens"] is None and not out["error"]:
        out["error"] = "no usage in the stream"
    return out


def seconds(result):
    return result["end"] - result["sent"]


def run_clients(port, bodies, clients):
    """Sends bodies from `clients` threads. Returns (wall seconds, results); raises on errors."""
    t0 = time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(lambda b: complete(port, b), bodies))
    check_errors(results, "decode")
    return time.monotonic() - t0, results


def check_errors(results, what):
    errors = [r["error"] for r in results if r["error"]]
    if errors:
        raise RuntimeError(f"{what}: {len(errors)} requests failed, e.g. {errors[0]}")


def token_ids(rng, vocab, n):
    return [rng.randrange(vocab) for _ in range(n)]


def decode_bodies(args, seed, n):
    rng = random.Random(seed)
    return [{"prompt": token_ids(rng, args.vocab, 16), "max_tokens": args.max_tokens,
             "temperature": 0} for _ in range(n)]


# ---- slowloris ---------------------------------------------------------------------------------

SLOW_HEADER = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096


class Trickle(threading.Thread):
    """Holds `count` connections open, each sending one header byte per second; one the server
    closes (408 after --header-timeout-s) is replaced at once."""

    def __init__(self, port, count):
        super().__init__(daemon=True)
        self.port, self.count, self.quit = port, count, threading.Event()
        self.conns = {}  # fd: [socket, when its next byte is due, bytes sent]
        self.closed = Counter()  # how the server ended them: "408", "other", "send failed"

    def run(self):
        now = time.monotonic()
        for i in range(self.count):
            self.open(now + i / self.count)  # spread over the first second
        while not self.quit.wait(0.05):
            self.send_due()
            self.replace_answered()
            while len(self.conns) < self.count and not self.quit.is_set():
                self.open(time.monotonic())
        for s, _, _ in self.conns.values():
            s.close()

    def open(self, when):
        try:
            s = socket.create_connection((HOST, self.port), timeout=2)
            s.setblocking(False)
            self.conns[s.fileno()] = [s, when, 0]
        except OSError:
            self.closed["connect failed"] += 1

    def send_due(self):
        now = time.monotonic()
        for fd, c in list(self.conns.items()):
            if c[1] > now:
                continue
            try:
                c[0].send(SLOW_HEADER[c[2]:c[2] + 1])
                c[1], c[2] = c[1] + 1.0, c[2] + 1
            except BlockingIOError:
                pass
            except OSError:
                self.conns.pop(fd)[0].close()
                self.closed["send failed"] += 1

    def replace_answered(self):
        poll = select.poll()
        for fd in self.conns:
            poll.register(fd, select.POLLIN)
        for fd, _ in poll.poll(0):
            s = self.conns.pop(fd)[0]
            try:
                self.closed["408" if b" 408 " in s.recv(64) else "other"] += 1
            except OSError:
                self.closed["other"] += 1
            s.close()


def probes_while_decoding(port, bodies, trickle=None):
    """40 /health probes, 0.25 s apart, each on a new connection, while rounds of concurrent
    decoding requests repeat until the probes end."""
    probes, open_counts = [], []

    def prober():
        for _ in range(40):
            open_counts.append(len(trickle.conns) if trickle else 0)
            t0 = time.monotonic()
            try:
                get_json(port, "/health")
                probes.append(time.monotonic() - t0)
            except (OSError, ValueError, http.client.HTTPException):
                probes.append(None)
            time.sleep(max(0.0, t0 + 0.25 - time.monotonic()))
    t = threading.Thread(target=prober)
    t.start()
    tokens, busy = 0, 0.0
    while t.is_alive() or busy == 0:
        wall, results = run_clients(port, bodies, len(bodies))
        tokens, busy = tokens + sum(r["tokens"] for r in results), busy + wall
    t.join()
    answered = [s for s in probes if s is not None]
    d = {"probes_within_1s": sum(s <= 1.0 for s in answered) / len(probes),
         "probe_p50_s": percentile(answered, 50), "probe_max_s": max(answered, default=NAN),
         "tokens_per_s": tokens / busy, "tokens": tokens, "decode_s": busy}
    return dict(d, slow_open_least=min(open_counts)) if trickle else d


def slowloris(args):
    bodies = decode_bodies(args, 1, 4)
    with gattn_server(args, "slowloris", 4) as port:
        run_clients(port, bodies, len(bodies))  # warm-up
        quiet = probes_while_decoding(port, bodies)
        trickle = Trickle(port, args.slow_connections)
        trickle.start()
        try:
            time.sleep(3)  # all open and trickling
            slow = probes_while_decoding(port, bodies, trickle)
        finally:
            trickle.quit.set()
            trickle.join()
    slow["slow_closed"] = dict(trickle.closed)
    ratio = slow["tokens_per_s"] / quiet["tokens_per_s"]
    print(f"  quiet: {fmt(quiet)}\n  slow:  {fmt(slow)}\n  (each: 40 /health probes 0.25 s apart"
          f" while 4 concurrent streamed requests of max_tokens {args.max_tokens} repeat;\n   "
          f"{args.slow_connections} slow connections at 1 byte/s; the server's default "
          "--header-timeout-s 10: each connection it closed was replaced at once)")
    return [target("slowloris: /health probes within 1 s", slow["probes_within_1s"], ">=", 0.95),
            target("slowloris: decode tokens/s, slow / quiet", ratio, ">=", 0.90)], \
        {"quiet": quiet, "slow": slow, "tokens_ratio": ratio}


# ---- prefill -----------------------------------------------------------------------------------

def gaps_overlapping(chunks, t0, t1):
    """The gaps between successive chunks that overlap [t0, t1]."""
    return [b - a for a, b in zip(chunks, chunks[1:]) if b > t0 and a < t1]


def decode_until(port, args, seed, stop_event, streams, max_tokens):
    """Streams decoding requests one after another until stop_event (or an error)."""
    rng = random.Random(seed)
    while not stop_event.is_set() and not (streams and streams[-1]["error"]):
        body = {"prompt": token_ids(rng, args.vocab, 16), "max_tokens": max_tokens,
                "temperature": 0}
        streams.append(complete(port, body, stop_event))


def prefill(args):
    rng, n, decoders = random.Random(2), args.prefill_tokens, args.prefill_decoders
    context = n + 64
    # Each decoding request's length: --max-tokens by default, so the decoders stay at short
    # positions in both windows and the ratio is the prompt's interference alone; "long" keeps
    # one request decoding through the whole prefill (as before 2026-12-05: its own position then
    # grows to ~4,000, which by itself makes its steps ~1.5x slower than in the quiet window).
    decoder_tokens = context - 32 if args.prefill_decoder_tokens == "long" else args.max_tokens
    with gattn_server(args, "prefill", decoders + 1, "--context", context) as port:
        alone = complete(port, {"prompt": token_ids(rng, args.vocab, n), "max_tokens": 1})
        check_errors([alone], "prefill alone")  # also the warm-up
        stop_event, streams = threading.Event(), [[] for _ in range(decoders)]
        threads = [threading.Thread(target=decode_until, args=(
            port, args, 10 + i, stop_event, streams[i], decoder_tokens)) for i in range(decoders)]
        for t in threads:
            t.start()
        time.sleep(1.0)  # past their prompts
        q0 = time.monotonic()
        time.sleep(args.quiet_s)
        q1 = time.monotonic()
        long = complete(port, {"prompt": token_ids(rng, args.vocab, n), "max_tokens": 1})
        time.sleep(0.5)  # the chunks after it
        stop_event.set()
        for t in threads:
            t.join()
    streams = [r for s in streams for r in s]
    check_errors([long] + [r for r in streams if r["error"] != "stopped"], "prefill")
    quiet = [g for r in streams for g in gaps_overlapping(r["chunks"], q0, q1)]
    during = [g for r in streams for g in gaps_overlapping(r["chunks"], long["sent"], long["end"])]
    d = {"decoders": decoders, "decoder_tokens": decoder_tokens, "prompt_tokens": n, "prefill_alone_s": seconds(alone),
         "prefill_while_decoding_s": seconds(long), "quiet_gaps": len(quiet),
         "quiet_p50_s": percentile(quiet, 50), "quiet_p99_s": percentile(quiet, 99),
         "during_gaps": len(during), "during_p50_s": percentile(during, 50),
         "during_p99_s": percentile(during, 99), "during_max_s": max(during, default=NAN),
         "streams_started_during": sum(long["sent"] < r["sent"] < long["end"] for r in streams)}
    d["ratio"] = d["during_p99_s"] / d["quiet_p99_s"]
    # where in the prompt's prefill the largest gaps fell (seconds after it was sent, gap)
    late = [(b - long["sent"], b - a) for r in streams for a, b in zip(r["chunks"], r["chunks"][1:])
            if b > long["sent"] and a < long["end"]]
    d["during_largest_gaps"] = [[round(t, 3), round(g, 4)] for t, g in
                                sorted(late, key=lambda x: -x[1])[:max(1, len(late) // 100)]]
    print(f"  {fmt(d)}\n  (gaps between one stream's chunks; a chunk carries every token decoded "
          "since the server's last write,\n  so on a fast model it may hold several; a decoder "
          f"whose stream ended starts another; quiet: {args.quiet_s:g} s before the long prompt)")
    return [target("prefill: decode gap p99, during / quiet", d["ratio"], "<=", 2.0)], d


# ---- prefix ------------------------------------------------------------------------------------

def prefix(args):
    rng, n, extra, timed = random.Random(3), args.prefix_tokens, 20, []
    with gattn_server(args, "prefix", 2, "--context", n + extra + 1) as port:
        warm_up = {"prompt": token_ids(rng, args.vocab, n + extra), "max_tokens": 1}
        check_errors([complete(port, warm_up)], "warm-up")
        before = get_json(port, "/health")["prefix_cache"]
        for _ in range(args.prefix_repeats):
            shared = token_ids(rng, args.vocab, n)
            cold = complete(port, {"prompt": shared, "max_tokens": 1})
            warm = complete(port, {"prompt": shared + token_ids(rng, args.vocab, extra),
                                   "max_tokens": 1})
            check_errors([cold, warm], "prefix")
            timed.append((seconds(cold), seconds(warm)))
        after = get_json(port, "/health")["prefix_cache"]
    d = {"repeats": len(timed), "cold_median_s": statistics.median(c for c, _ in timed),
         "warm_median_s": statistics.median(w for _, w in timed),
         "cold_s": [c for c, _ in timed], "warm_s": [w for _, w in timed],
         "hits_added": after["hits"] - before["hits"],
         "tokens_reused_added": after["tokens_reused"] - before["tokens_reused"]}
    d["ratio"] = d["warm_median_s"] / d["cold_median_s"]
    print(f"  {fmt(d)}\n  (each time: a new {n}-token prompt, max_tokens 1, whole response; then "
          f"the same {n} + {extra} new tokens; /health's prefix_cache before and after)")
    return [target("prefix: warm / cold, median time", d["ratio"], "<=", 0.25),
            target("prefix: /health prefix_cache hits added", d["hits_added"], ">=",
                   args.prefix_repeats)], d


# ---- compare -----------------------------------------------------------------------------------

LEVELS = [1, 4, 16]


def llama_server(args, parallel, context):
    return server("llama.cpp", lambda port: [
        args.llama_server, "-m", args.gguf, "--host", HOST, "--port", str(port), "-np",
        str(parallel), "-c", str(parallel * context), "-t", str(args.threads), "--cont-batching"])


def measure_levels(engine, args, extra):
    """Per client count C: (tokens/s, median TTFT s, finish reasons) of 2 C requests from C
    clients; prompts differ between levels (no prefix cache hits) and are the same per engine."""
    out = {}
    with engine as port:
        run_clients(port, [dict(b, **extra) for b in decode_bodies(args, 99, 1)], 1)  # warm-up
        for clients in LEVELS:
            bodies = [dict(b, **extra) for b in decode_bodies(args, 100 + clients, 2 * clients)]
            wall, results = run_clients(port, bodies, clients)
            first = [(r["chunks"][0] if r["chunks"] else r["end"]) - r["sent"] for r in results]
            out[clients] = (sum(r["tokens"] for r in results) / wall, statistics.median(first),
                            Counter(r["finish"] for r in results))
    return out


def compare(args):
    context, parallel = 16 + args.max_tokens + 16, max(LEVELS)
    engines = [("gattn", lambda: gattn_server(args, "gattn", parallel, "--context", context),
                {"ignore_eos": True}),
               ("llama.cpp", lambda: llama_server(args, parallel, context), {"ignore_eos": True})]
    runs = {name: [] for name, _, _ in engines}
    for i in range(args.rounds):
        for name, make, extra in engines[::-1] if i % 2 else engines:
            runs[name].append(measure_levels(make(), args, extra))
    rows, targets = {}, []
    for clients in LEVELS:
        row = {}
        for name, per_round in runs.items():
            row[name + "_tokens_per_s"] = statistics.median(r[clients][0] for r in per_round)
            row[name + "_ttft_s"] = statistics.median(r[clients][1] for r in per_round)
            row[name + "_finish"] = dict(sum((r[clients][2] for r in per_round), Counter()))
        row["tokens_ratio"] = row["gattn_tokens_per_s"] / row["llama.cpp_tokens_per_s"]
        row["ttft_ratio"] = row["gattn_ttft_s"] / row["llama.cpp_ttft_s"]
        rows[clients] = row
        print(f"  {clients} clients: {fmt(row)}")
        scored = clients >= 4  # the targets: >= 1.0x llama.cpp at 4 and 16 clients
        targets += [target(f"compare: tokens/s, gattn / llama.cpp, {clients} cl.",
                           row["tokens_ratio"], ">=" if scored else "info", 1.0 if scored else None),
                    target(f"compare: TTFT, llama.cpp / gattn, {clients} cl.",
                           1 / row["ttft_ratio"], ">=" if scored else "info", 1.0 if scored else None)]
    print(f"  (medians of {args.rounds} rounds, engines alternating; 2 requests per client of "
          f"max_tokens {args.max_tokens}, ignore_eos; tokens from "
          f"each stream's usage; gattn --context {context}, llama.cpp -c {parallel} x {context})")
    return targets, rows


# ---- the table ---------------------------------------------------------------------------------

def fmt(d):
    def one(v):
        if isinstance(v, list) and v and isinstance(v[0], list):
            return f"({len(v)} in the JSON)"
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    return ", ".join(f"{k} {[round(x, 4) for x in v] if isinstance(v, list) and not (v and isinstance(v[0], list)) else one(v)}"
                     for k, v in d.items())


def target(name, value, op, bound):
    """A table row; `value` None: the measurement failed."""
    met = None if op == "info" else value is not None and (
        value >= bound if op == ">=" else value <= bound)
    return {"target": name, "measured": value, "op": op, "bound": bound,
            "verdict": "(no target)" if met is None else "MET" if met else "NOT MET"}


def print_table(rows):
    print(f"\n{'target':<46} {'required':>9} {'measured':>9}  verdict")
    for r in rows:
        need = "" if r["bound"] is None else f"{r['op']} {r['bound']:g}"
        got = "failed" if r["measured"] is None else f"{r['measured']:.4g}"
        print(f"{r['target']:<46} {need:>9} {got:>9}  {r['verdict']}")


def vocab_size(checkpoint):
    """The model's vocab_size, capped at the tokenizer's (the server decodes prompt ids)."""
    with open(os.path.join(checkpoint, "config.json")) as f:
        vocab = json.load(f)["vocab_size"]
    try:
        with open(os.path.join(checkpoint, "tokenizer.json")) as f:
            return min(vocab, len(json.load(f)["model"]["vocab"]))
    except (OSError, KeyError, TypeError, ValueError):
        return vocab


def watchdog(seconds):
    def expire():
        print(f"serve_targets: past --max-seconds {seconds:g}; stopping", file=sys.stderr,
              flush=True)
        for proc in list(RUNNING):
            proc.kill()
        os._exit(3)
    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


TARGETS = {"slowloris": slowloris, "prefill": prefill, "prefix": prefix, "compare": compare}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], usage=(
        "%(prog)s --checkpoint DIR [options] [slowloris] [prefill] [prefix] [compare]"))
    p.add_argument("targets", nargs="*", help=f"of {', '.join(TARGETS)} (default: all; compare "
                   "only with --llama-server and --gguf)")
    p.add_argument("--gattn", default="build/gattn")
    p.add_argument("--checkpoint", required=True, help="a folder with config.json")
    p.add_argument("--threads", type=int, default=1, help="--threads (-t) of every server")
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32",
                   help="gattn's --weights-dtype")
    p.add_argument("--kv-dtype", choices=["f32", "bf16"], default="f32",
                   help="gattn's --kv-dtype (llama-server keeps its default f16 cache)")
    p.add_argument("--max-tokens", type=int, default=64, help="of each decoding request")
    p.add_argument("--slow-connections", type=int, default=200)
    p.add_argument("--prefill-tokens", type=int, default=4096)
    p.add_argument("--prefill-decoders", type=int, default=1, help="streams decoding meanwhile")
    p.add_argument("--prefill-decoder-tokens", choices=["short", "long"], default="short",
                   help="prefill: decoding requests of --max-tokens (short, restarted) or one "
                        "request per decoder spanning the whole prefill (long)")
    p.add_argument("--quiet-s", type=float, default=4, help="prefill: the quiet window")
    p.add_argument("--prefix-tokens", type=int, default=1000)
    p.add_argument("--prefix-repeats", type=int, default=5)
    p.add_argument("--llama-server", help="llama.cpp's llama-server binary (for compare)")
    p.add_argument("--gguf", help="the same weights as GGUF (for compare)")
    p.add_argument("--rounds", type=int, default=2, help="compare: rounds, engines alternating")
    p.add_argument("--max-seconds", type=float, default=1800, help="then everything is killed")
    p.add_argument("--json", help="also write the table and the details here")
    args = p.parse_intermixed_args()
    args.targets = args.targets or [t for t in TARGETS if t != "compare" or args.llama_server]
    if set(args.targets) - set(TARGETS):
        p.error(f"unknown targets {sorted(set(args.targets) - set(TARGETS))}")
    if "compare" in args.targets and not (args.llama_server and args.gguf):
        p.error("compare needs --llama-server and --gguf")
    try:
        args.vocab = vocab_size(args.checkpoint)
    except (OSError, KeyError, ValueError) as e:
        p.error(f"cannot read the vocab_size of --checkpoint's config.json: {e}")
    return args


def main():
    args = parse_args()
    watchdog(args.max_seconds)
    rows, details = [], {}
    for name in args.targets:
        print(f"{name}:", flush=True)
        try:
            found, details[name] = TARGETS[name](args)
        except RuntimeError as e:
            print(f"  FAILED: {e}")
            found = [target(f"{name}: ran to the end", None, "", None)]
            details[name] = {"error": str(e)}
        rows += found
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "targets": rows, "details": details}, f, indent=1)
    sys.exit(0 if all(r["verdict"] != "NOT MET" for r in rows) else 1)


if __name__ == "__main__":
    main()
