#!/usr/bin/env python3
"""serve_load: N concurrent streams against a running `tern serve` (or any OpenAI-compatible server).

Each stream sends a completion request of about --prompt-tokens tokens (distinct per stream, so the prefix cache does
not help unless --shared-prefix), asks for exactly --gen-tokens tokens (ignore_eos) and reads the SSE stream. Prints,
and with --out writes as JSON:
  aggregate generated tok/s   all streams' generated tokens / wall time from the first request to the last token
  TTFT p50 / p99              time to first token per stream (ms)
  ITL p50 / p99               inter-token latency: gaps between consecutive content events of a stream (ms)
Standard library only. Bounded: every stream ends by --timeout.

  python3 bench/serve_load.py --url http://127.0.0.1:8080 -n 64 --prompt-tokens 512 --gen-tokens 128
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse


def pct(v, q):
    if not v:
        return float("nan")
    v = sorted(v)
    k = (len(v) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def one_stream(u, i, args, res, t_start):
    words = " ".join(f"w{(i * 7919 + k) % 1000}" for k in range(args.prompt_tokens))  # ~1-2 tokens a word
    prefix = ("Shared context. " * (args.prompt_tokens // 3)) if args.shared_prefix else ""
    body = {"model": "m", "prompt": prefix + f"Stream {i}: " + words, "max_tokens": args.gen_tokens,
            "temperature": args.temperature, "seed": i, "stream": True, "stream_options": {"include_usage": True},
            "ignore_eos": True}
    h = {"Content-Type": "application/json"}
    if args.api_key:
        h["Authorization"] = "Bearer " + args.api_key
    t0 = time.perf_counter()
    times, usage, err = [], None, None
    try:
        c = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=args.timeout)
        c.request("POST", "/v1/completions", body=json.dumps(body), headers=h)
        r = c.getresponse()
        if r.status != 200:
            err = f"HTTP {r.status}: {r.read()[:200]!r}"
        else:
            buf = b""
            while True:
                chunk = r.read1(65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n\n" in buf:
                    ev, buf = buf.split(b"\n\n", 1)
                    if not ev.startswith(b"data: ") or ev == b"data: [DONE]":
                        continue
                    j = json.loads(ev[6:])
                    if j.get("usage"):
                        usage = j["usage"]
                    if j.get("choices") and j["choices"][0].get("text"):
                        times.append(time.perf_counter())
        c.close()
    except Exception as e:  # reported per stream
        err = repr(e)
    res[i] = {"t0": t0, "times": times, "usage": usage, "err": err}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("-n", "--streams", type=int, default=8)
    ap.add_argument("--prompt-tokens", type=int, default=64, help="words in each prompt (about as many tokens)")
    ap.add_argument("--gen-tokens", type=int, default=32)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--shared-prefix", action="store_true", help="every prompt starts with the same long prefix")
    ap.add_argument("--api-key", default=os.environ.get("TERN_API_KEY"))
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--out", help="write the receipt (JSON) here")
    ap.add_argument("--note", default="", help="a free-text note for the receipt (machine, server flags)")
    args = ap.parse_args()
    u = urllib.parse.urlparse(args.url)
    res = [None] * args.streams
    ths = [threading.Thread(target=one_stream, args=(u, i, args, res, None)) for i in range(args.streams)]
    t_start = time.perf_counter()
    for t in ths:
        t.start()
    for t in ths:
        t.join(args.timeout + 10)
    errs = [r["err"] for r in res if r and r["err"]]
    ok = [r for r in res if r and not r["err"] and r["times"]]
    t_end = max((r["times"][-1] for r in ok), default=time.perf_counter())
    gen = sum((r["usage"] or {}).get("completion_tokens", len(r["times"])) for r in ok)
    ttft = [(r["times"][0] - r["t0"]) * 1e3 for r in ok]
    itl = [(b - a) * 1e3 for r in ok for a, b in zip(r["times"], r["times"][1:])]
    wall = t_end - t_start
    out = {
        "tool": "bench/serve_load.py", "url": args.url, "streams": args.streams, "prompt_words": args.prompt_tokens,
        "prompt_tokens_mean": statistics.mean([r["usage"]["prompt_tokens"] for r in ok if r["usage"]]) if ok else None,
        "gen_tokens": args.gen_tokens, "temperature": args.temperature, "shared_prefix": args.shared_prefix,
        "completed": len(ok), "errors": errs[:5], "wall_s": round(wall, 3), "generated_tokens": gen,
        "aggregate_gen_tok_s": round(gen / wall, 2) if wall > 0 else None,
        "ttft_ms_p50": round(pct(ttft, 0.5), 1), "ttft_ms_p99": round(pct(ttft, 0.99), 1),
        "itl_ms_p50": round(pct(itl, 0.5), 1), "itl_ms_p99": round(pct(itl, 0.99), 1),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "note": args.note,
    }
    try:
        out["commit"] = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                                       cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except OSError:
        pass
    print(f"{len(ok)}/{args.streams} streams, prompt ~{out['prompt_tokens_mean']} tokens, {args.gen_tokens} generated each: "
          f"{out['aggregate_gen_tok_s']} tok/s aggregate | TTFT p50 {out['ttft_ms_p50']} ms p99 {out['ttft_ms_p99']} ms | "
          f"ITL p50 {out['itl_ms_p50']} ms p99 {out['itl_ms_p99']} ms | wall {out['wall_s']} s")
    for e in errs[:5]:
        print("error:", e, file=sys.stderr)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
