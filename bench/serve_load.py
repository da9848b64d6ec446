#!/usr/bin/env python3
"""serve_load: N concurrent streams against a running `tern serve` (or any OpenAI-compatible server).

Each stream sends a completion request of about --prompt-tokens tokens (distinct per stream, so the prefix cache does
not help unless --shared-prefix), asks for exactly --gen-tokens tokens (ignore_eos) and reads the SSE stream. Prints,
and with --out writes as JSON:
  aggregate generated tok/s   all streams' generated tokens / wall time from the first request to the last token
  TTFT p50 / p99              time to first token per stream (ms)
  ITL p50 / p99               inter-token latency: gaps between consecutive content events of a stream (ms)
  decode tok/s a stream       (completion tokens - 1) / (last event - first event), median and mean over streams: a
                              stream's decode rate without its wait and prefill (-n 1: the number `tern bench`'s
                              tg128 compares with)
  all-decoding tok/s          content events after the last stream's first token / the time from then to the last
                              token: the aggregate while every stream decodes (llama-batched-bench's S_TG is this
                              kind of number; the aggregate above includes the prefills)
--ids: each prompt is exactly --prompt-tokens token ids (pseudo-random in [V/16, 15V/16), V the model's n_vocab from
/v1/models, a seed a stream) instead of words: exact lengths, and models without a tokenizer (`tern synth` files;
their tokens come back as "[id]", one event a token). Without it the prompt is words (~1-2 tokens a word).
Standard library only (no openai package). Bounded: every stream ends by --timeout. run() is the same as a function
(bench/serve_receipt.py imports it).

  python3 bench/serve_load.py --url http://127.0.0.1:8080 -n 64 --prompt-tokens 512 --gen-tokens 128 --ids
"""
import argparse
import http.client
import json
import os
import random
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


def model_info(url, timeout=30, api_key=None):
    """GET /v1/models: the first model's entry (tern's has meta.n_vocab)."""
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    c.request("GET", "/v1/models", headers={"Authorization": "Bearer " + api_key} if api_key else {})
    r = c.getresponse()
    j = json.loads(r.read())
    c.close()
    return j["data"][0]


def random_ids(n, n_vocab, seed):
    """n pseudo-random token ids in [V/16, 15V/16) from seed (a string): clear of the ends where vocabularies keep
    special tokens."""
    rng = random.Random(seed)
    lo, hi = n_vocab // 16, n_vocab - n_vocab // 16
    return [rng.randrange(lo, hi) for _ in range(n)]


def prompt_of(i, args, n_vocab):
    if args.ids:
        ids = random_ids(args.prompt_tokens, n_vocab, f"{args.seed}-{i}")
        if args.shared_prefix:  # the first half the same for every stream
            ids[: args.prompt_tokens // 2] = random_ids(args.prompt_tokens // 2, n_vocab, f"{args.seed}-shared")
        return ids
    words = " ".join(f"w{(i * 7919 + k) % 1000}" for k in range(args.prompt_tokens))  # ~1-2 tokens a word
    prefix = ("Shared context. " * (args.prompt_tokens // 3)) if args.shared_prefix else ""
    return prefix + f"Stream {i}: " + words


def one_stream(u, i, args, res, prompt):
    body = {"model": "m", "prompt": prompt, "max_tokens": args.gen_tokens,
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
                    if j.get("error"):
                        err = f"stream error: {j['error']}"
                    if j.get("usage"):
                        usage = j["usage"]
                    if j.get("choices") and j["choices"][0].get("text"):
                        times.append(time.perf_counter())
        c.close()
    except Exception as e:  # reported per stream
        err = repr(e)
    res[i] = {"t0": t0, "times": times, "usage": usage, "err": err}


def run(url, streams, prompt_tokens, gen_tokens, ids=False, temperature=0.0, shared_prefix=False, api_key=None,
        timeout=600, seed=0, note=""):
    """The load as a function: returns the receipt dict (what --out writes)."""
    args = argparse.Namespace(streams=streams, prompt_tokens=prompt_tokens, gen_tokens=gen_tokens, ids=ids,
                              temperature=temperature, shared_prefix=shared_prefix, api_key=api_key, timeout=timeout,
                              seed=seed)
    u = urllib.parse.urlparse(url)
    n_vocab = model_info(url, timeout, api_key)["meta"]["n_vocab"] if ids else 0
    prompts = [prompt_of(i, args, n_vocab) for i in range(streams)]
    res = [None] * streams
    ths = [threading.Thread(target=one_stream, args=(u, i, args, res, prompts[i])) for i in range(streams)]
    t_start = time.perf_counter()
    for t in ths:
        t.start()
    for t in ths:
        t.join(timeout + 10)
    errs = [r["err"] for r in res if r and r["err"]]
    errs += ["no answer" for r in res if r is None]
    ok = [r for r in res if r and not r["err"] and r["times"]]
    t_end = max((r["times"][-1] for r in ok), default=time.perf_counter())
    gen = sum((r["usage"] or {}).get("completion_tokens", len(r["times"])) for r in ok)
    ttft = [(r["times"][0] - r["t0"]) * 1e3 for r in ok]
    itl = [(b - a) * 1e3 for r in ok for a, b in zip(r["times"], r["times"][1:])]
    dec = [((r["usage"] or {}).get("completion_tokens", len(r["times"])) - 1) / (r["times"][-1] - r["times"][0])
           for r in ok if len(r["times"]) > 1 and r["times"][-1] > r["times"][0]]
    wall = t_end - t_start
    t_all = max((r["times"][0] for r in ok), default=t_end)  # from here every stream is decoding
    n_all = sum(1 for r in ok for t in r["times"] if t > t_all)
    out = {
        "tool": "bench/serve_load.py", "url": url, "streams": streams, "prompt": "ids" if ids else "words",
        "prompt_tokens_arg": prompt_tokens,
        "prompt_tokens_mean": statistics.mean([r["usage"]["prompt_tokens"] for r in ok if r["usage"]]) if ok else None,
        "gen_tokens": gen_tokens, "temperature": temperature, "shared_prefix": shared_prefix,
        "completed": len(ok), "errors": errs[:5], "n_errors": len(errs), "wall_s": round(wall, 3),
        "generated_tokens": gen, "aggregate_gen_tok_s": round(gen / wall, 2) if wall > 0 else None,
        "ttft_ms_p50": round(pct(ttft, 0.5), 1), "ttft_ms_p99": round(pct(ttft, 0.99), 1),
        "itl_ms_p50": round(pct(itl, 0.5), 2), "itl_ms_p99": round(pct(itl, 0.99), 2),
        "decode_tok_s_stream_median": round(statistics.median(dec), 2) if dec else None,
        "decode_tok_s_stream_mean": round(statistics.mean(dec), 2) if dec else None,
        "all_decoding_tok_s": round(n_all / (t_end - t_all), 2) if t_end > t_all and n_all else None,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "note": note,
    }
    try:
        out["commit"] = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                                       cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except OSError:
        pass
    return out


def line(out):
    return (f"{out['completed']}/{out['streams']} streams, prompt ~{out['prompt_tokens_mean']} tokens, "
            f"{out['gen_tokens']} generated each: {out['aggregate_gen_tok_s']} tok/s aggregate | TTFT p50 "
            f"{out['ttft_ms_p50']} ms p99 {out['ttft_ms_p99']} ms | ITL p50 {out['itl_ms_p50']} ms p99 "
            f"{out['itl_ms_p99']} ms | decode a stream {out['decode_tok_s_stream_median']} tok/s (median) | all decoding "
            f"{out['all_decoding_tok_s']} tok/s | wall "
            f"{out['wall_s']} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("-n", "--streams", type=int, default=8)
    ap.add_argument("--prompt-tokens", type=int, default=64, help="ids in each prompt (--ids), else words (about as many tokens)")
    ap.add_argument("--gen-tokens", type=int, default=32)
    ap.add_argument("--ids", action="store_true", help="prompts of exactly --prompt-tokens random token ids")
    ap.add_argument("--seed", type=int, default=0, help="the ids' seed (--ids), with the stream's index")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--shared-prefix", action="store_true", help="every prompt starts with the same long prefix")
    ap.add_argument("--api-key", default=os.environ.get("TERN_API_KEY"))
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--out", help="write the receipt (JSON) here")
    ap.add_argument("--note", default="", help="a free-text note for the receipt (machine, server flags)")
    a = ap.parse_args()
    out = run(a.url, a.streams, a.prompt_tokens, a.gen_tokens, a.ids, a.temperature, a.shared_prefix, a.api_key,
              a.timeout, a.seed, a.note)
    print(line(out))
    for e in out["errors"]:
        print("error:", e, file=sys.stderr)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 1 if out["n_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
