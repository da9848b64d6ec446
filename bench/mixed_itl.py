#!/usr/bin/env python3
"""mixed_itl: issue 26's mixed-step table: decode inter-token latency against the scheduler's chunk budget while one
long prompt prefills (bench/gpu_check.sh step mixed).

  python3 bench/mixed_itl.py -m MODEL [--device cuda] [--budgets 256,512,1024,2048,4096] [--streams 16]
                             [--long-tokens 32768] [--rounds 2] --out R.json --md R.md --log-dir DIR

For each budget B (round 1 in the given order, round 2 reversed: MEASURE.md's interleaving), a fresh
`tern serve --batch-tokens B --parallel S+1 -c CTX` (CTX: the long prompt and the streams' generations fit), then:
 1. warm-up, not recorded: the same trial at a small scale (S streams, a prompt of a few chunks);
 2. S streams (--streams) of --short-tokens token ids each, greedy, ignore_eos, max_tokens the context's rest, read
    as SSE; once every stream has its first token, --baseline-tokens more tokens of each (the baseline);
 3. one prompt of --long-tokens token ids (max_tokens 1, not streamed) submitted; its time to first token is the time
    from sending it to its response (one token: the response is the first token); /metrics read before and after;
 4. --tail-tokens more tokens of each stream, then the streams hang up (the server frees them within a step);
 5. (unless --no-alone) the same long prompt length again (other ids) with nothing else running: TTFT alone.

What the numbers mean (src/server/sched.c, src/runtime/engine.c): a step runs every decoding stream's next token
first, then the long prompt's next chunk of max(B - S, 16) tokens; its tokens are published when the whole step ends.
So every step that carries a chunk gives each stream exactly one token, and the long prompt takes
n_mixed = ceil(long / max(B - S, 16)) such steps, the last of which also samples its first token. A stream's ITL
during the prefill is the gap between the arrival times of consecutive tokens (one SSE event a token as a rule; an
event that carried k tokens is counted as k, k - 1 of them with a gap of 0, and counted in the receipt: a `tern synth`
model's token texts are "[id]", counted from the text; a model with a tokenizer can hold a token's text back, a cut
UTF-8 character, into the next event, so there the streams ask `logprobs: 0` and count the event's logprobs tokens,
which adds the host logits path to every step: --count): its n_mixed chunk-step gaps, the last ending at the token of
the long prompt's last chunk step (the chunk step whose token arrives nearest the response). Before them, while the
server receives and admits the prompt, a stream gets pure decode steps. Cross-checks (analyze(), each in the receipt):
exactly n_mixed chunk steps a stream, all after its admission's steps; that last-chunk token within 10 ms of the
response (published in the same step); between the /metrics scrapes every step ran the S streams' tokens
(tern_step_tokens_total = S x steps + the prompt, tern_generation_tokens_total = S x steps + 1) and at least the
window's steps; tern_prompt_tokens_total rose by exactly the long prompt (cached_tokens 0). A failed check makes the
trial FAIL. --reanalyze RECEIPT runs the analysis again on a receipt's recorded token times.
Baseline: the gaps that start after every stream had its first token and end before the long prompt was sent.
Decode tok/s: each stream's tokens of the window / the window's length (per stream, summed over streams).
On CUDA the step is several forward passes: the S decode tokens as one pass (up to 16 rows a pass: the GEMV twins,
batch invariance) and the chunk as passes of at most -ub rows (default 2048); the ITL during is their sum.

Writes the receipt (--out, JSON: every trial, the servers' commands, each stream's token times) and a markdown table
(--md); the last line printed is a one-line summary (gpu_check's note), DONE when every trial ran and every
cross-check held, else FAIL. Server logs: DIR/mixed-B<budget>-r<round>.log. Standard library only.
"""
import argparse
import http.client
import json
import math
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from serve_load import model_info, pct, random_ids  # noqa: E402
from serve_receipt import Server  # noqa: E402

SYNTH_PIECE = re.compile(r"(?:\[\d+\])+")


def log(*a):
    print(*a, flush=True)


def metrics(url, timeout=30):
    """GET /metrics as {series: value} (labels kept in the name)."""
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    c.request("GET", "/metrics")
    r = c.getresponse()
    txt = r.read().decode()
    c.close()
    out = {}
    for ln in txt.splitlines():
        if ln and not ln.startswith("#"):
            k, v = ln.rsplit(" ", 1)
            out[k] = float(v)
    return out


def count_mode(url, want):
    """How a stream counts an event's tokens: "text" when the model's tokens read "[id]" (a `tern synth` file: exact,
    nothing added to the step), else "logprobs"."""
    if want != "auto":
        return want
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("POST", "/detokenize", body=json.dumps({"tokens": [1000]}), headers={"Content-Type": "application/json"})
    txt = json.loads(c.getresponse().read()).get("content")
    c.close()
    return "text" if txt == "[1000]" else "logprobs"


def wait_until(cond, timeout, what, streams=()):
    t0 = time.perf_counter()
    while not cond():
        for s in streams:
            if s.err or not s.is_alive():
                raise RuntimeError(f"stream {s.i} ended while waiting for {what}: {s.err or s.finish or 'closed'}")
        if time.perf_counter() - t0 > timeout:
            raise RuntimeError(f"timed out ({timeout} s) waiting for {what}")
        time.sleep(0.005)


def wait_idle(url, timeout):
    t0 = time.perf_counter()
    while True:
        m = metrics(url)
        if m["tern_requests_running"] == 0 and m["tern_requests_waiting"] == 0:
            return m
        if time.perf_counter() - t0 > timeout:
            raise RuntimeError(f"the server still runs {m['tern_requests_running']:.0f} requests after {timeout} s")
        time.sleep(0.02)


class Stream(threading.Thread):
    """One decoding stream: token arrival times (perf_counter s), one a token, until stop is set (then it hangs up)."""

    def __init__(self, u, i, ids, max_tokens, stop, timeout, count):
        super().__init__(daemon=True)
        self.u, self.i, self.ids, self.max_tokens, self.stop, self.timeout = u, i, ids, max_tokens, stop, timeout
        self.count = count  # "text": a synth model's [id] texts; "logprobs": the event's logprobs tokens
        self.times, self.err, self.finish, self.multi = [], None, None, 0

    def run(self):
        body = {"model": "m", "prompt": self.ids, "max_tokens": self.max_tokens, "temperature": 0, "seed": self.i,
                "stream": True, "ignore_eos": True}
        if self.count == "logprobs":
            body["logprobs"] = 0
        try:
            c = http.client.HTTPConnection(self.u.hostname, self.u.port, timeout=self.timeout)
            c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
            r = c.getresponse()
            if r.status != 200:
                self.err = f"HTTP {r.status}: {r.read()[:200]!r}"
                return
            buf = b""
            while not self.stop.is_set():
                chunk = r.read1(65536)
                t = time.perf_counter()
                if not chunk:
                    if not self.stop.is_set():
                        self.err = f"the stream ended early (finish_reason {self.finish})"
                    break
                buf += chunk
                n = 0
                while b"\n\n" in buf:
                    ev, buf = buf.split(b"\n\n", 1)
                    if not ev.startswith(b"data: ") or ev == b"data: [DONE]":
                        continue
                    j = json.loads(ev[6:])
                    if j.get("error"):
                        self.err = f"stream error: {j['error']}"
                    for ch in j.get("choices") or []:
                        txt = ch.get("text") or ""
                        if self.count == "logprobs":
                            n += len((ch.get("logprobs") or {}).get("tokens") or [])
                        elif txt:  # a synth model's "[id][id]" is that many tokens; other text one
                            n += len(re.findall(r"\[\d+\]", txt)) if SYNTH_PIECE.fullmatch(txt) else 1
                        if ch.get("finish_reason"):
                            self.finish = ch["finish_reason"]
                if n > 1:
                    self.multi += 1
                self.times.extend([t] * n)
            r.close()
            c.close()
        except Exception as e:  # noqa: BLE001 (reported with the trial)
            self.err = repr(e)


def after(times, t):
    return sum(1 for x in times if x > t)


def one_request(u, ids, timeout):
    """A non-streamed completion of max_tokens 1: (seconds from sending to the response, usage)."""
    body = json.dumps({"model": "m", "prompt": ids, "max_tokens": 1, "temperature": 0, "ignore_eos": True})
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    t1 = time.perf_counter()
    c.close()
    if r.status != 200:
        raise RuntimeError(f"the long prompt: HTTP {r.status}: {data[:300]!r}")
    return t0, t1, json.loads(data)["usage"]


def chunk_of(budget, streams):
    """The prefill tokens of a step beside `streams` decode tokens: sched.c's rule (budget - decodes, at least 16)."""
    return max(budget - streams, 16)


def trial(url, a, budget, n_long, n_base, n_tail, seed, alone):
    """One measurement on a running server; returns the record (raises on a failed request)."""
    u = urllib.parse.urlparse(url)
    V = model_info(url)["meta"]["n_vocab"]
    S = a.streams
    chunk = chunk_of(budget, S)
    n_mixed = math.ceil(n_long / chunk)
    stop = threading.Event()
    ths = [Stream(u, i, random_ids(a.short_tokens, V, f"{seed}-s{i}"), a.ctx - a.short_tokens, stop, a.timeout,
                  a.count_mode) for i in range(S)]
    rec = {"budget": budget, "chunk": chunk, "n_mixed": n_mixed, "long_tokens": n_long, "streams": S}
    try:
        for t in ths:
            t.start()
        wait_until(lambda: all(t.times for t in ths), a.timeout, "every stream's first token", ths)
        t_all = max(t.times[0] for t in ths)
        wait_until(lambda: all(after(t.times, t_all) >= n_base for t in ths), a.timeout, "the baseline tokens", ths)
        m0 = metrics(url)
        t_sub, t_done, usage = one_request(u, random_ids(n_long, V, f"{seed}-long"), a.timeout)
        m1 = metrics(url)
        wait_until(lambda: all(after(t.times, t_done) >= n_tail for t in ths), a.timeout, "the tail tokens", ths)
    finally:
        stop.set()
        for t in ths:
            t.join(a.timeout)
    errs = [f"stream {t.i}: {t.err}" for t in ths if t.err]
    if errs:
        raise RuntimeError("; ".join(errs[:3]))
    wait_idle(url, a.timeout)

    times = [[(x - t_sub) * 1e3 for x in t.times] for t in ths]  # ms from the long prompt's submission
    rec["times_ms"] = [[round(x, 2) for x in T] for T in times]
    rec.update({"t_all_ms": round((t_all - t_sub) * 1e3, 2), "t_done_ms": round((t_done - t_sub) * 1e3, 2),
                "metrics_delta": {k: m1[k] - m0[k] for k in ("tern_steps_total", "tern_step_tokens_total",
                                                            "tern_prompt_tokens_total", "tern_generation_tokens_total")},
                "usage": usage, "multi": sum(t.multi for t in ths)})
    analyze(rec)
    if alone:
        s0, s1, us = one_request(u, random_ids(n_long, V, f"{seed}-alone"), a.timeout)
        rec["ttft_alone_ms"] = round((s1 - s0) * 1e3, 1)
        rec["alone_cached_tokens"] = (us.get("prompt_tokens_details") or {}).get("cached_tokens")
        wait_idle(url, a.timeout)
    return rec


def analyze(rec):
    """The trial's numbers and cross-checks from its token times (rec: times_ms, t_all_ms, t_done_ms, all ms from
    the long prompt's submission; n_mixed, streams, long_tokens; metrics_delta; usage or, in a receipt written before
    usage was kept, the old checks' prompt counts). A stream's gaps after the submission are the pure decode steps
    that run while the server receives and admits the prompt (a 32k-id body: ~20 ms, several steps once a step takes
    ~3 ms), then its chunk steps, each slower than any pure decode step (threshold thr below). The prompt's last
    chunk step is the chunk step whose token arrives nearest the response (the response and that step's SSE events
    leave in the same step, a few ms apart either way). The checks: exactly n_mixed chunk steps in every stream's
    window, all after its admission steps (no pure decode step between two chunks: the scheduler gives the prompt a
    chunk in every step until it is done); the last one within `skew` of the response; between the two /metrics
    scrapes, every step ran the S streams' tokens (step and generated token counts) and at least the window's steps;
    the prompt counted in full, nothing cached. (Until 2026-12-06 the window was the n_mixed gaps back from the token
    by the response + half a base gap, with steps - 1 .. + 2 gaps after the submission and /metrics steps + 4 allowed:
    a tolerance of slower steps, which 3 ms decode steps outran: bench/gpu/s44-mixed.)"""
    T, t_all, t_done = rec["times_ms"], rec["t_all_ms"], rec["t_done_ms"]
    n_mixed, S, n_long = rec["n_mixed"], rec["streams"], rec["long_tokens"]
    base, spans_b, n_b = [], [], []
    for X in T:
        base += [X[j] - X[j - 1] for j in range(1, len(X)) if X[j - 1] >= t_all and X[j] < 0.0]
        jb = [j for j in range(len(X)) if t_all <= X[j] < 0.0]
        if len(jb) > 1:
            spans_b.append((X[jb[-1]] - X[jb[0]]) / 1e3)
            n_b.append(len(jb) - 1)
    if not base:
        raise RuntimeError("no baseline gaps before the long prompt")
    skew = 10.0  # ms the response and its step's SSE events may be apart
    # a gap above thr is a chunk step: between a pure decode step (the baseline's p50, and above its p99) and the
    # longest gap of the prompt's window (a chunk step), on a log scale
    wmax = max(X[j] - X[j - 1] for X in T for j in range(1, len(X)) if X[j - 1] >= 0.0 and X[j] <= t_done + skew)
    thr = max(math.sqrt(pct(base, 0.5) * wmax), pct(base, 0.99) + 1.0)
    during, spans_d, win_chunk, win_fast, order_ok, first_gap, last_gap = [], [], [], [], [], [], []
    for X in T:
        # the chunk steps by the response (+ skew); the last chunk, the prompt's remainder, can be short enough for a
        # step under thr: then the step after the last long one is it
        cand = [j for j in range(1, len(X)) if X[j - 1] >= 0.0 and X[j] <= t_done + skew and X[j] - X[j - 1] > thr]
        if not cand:
            raise RuntimeError("a stream has no chunk step after the long prompt was sent")
        i1 = cand[-1] if len(cand) >= n_mixed or cand[-1] + 1 >= len(X) else cand[-1] + 1
        w = [j for j in range(1, i1 + 1) if X[j - 1] >= 0.0]  # the gaps from the submission to the last chunk step
        chunk = [j for j in w if X[j] - X[j - 1] > thr or j == i1]
        fast = [j for j in w if j not in chunk]
        win_chunk.append(len(chunk))
        win_fast.append(len(fast))
        order_ok.append(not fast or not chunk or max(fast) < min(chunk))  # admission first, then chunk steps only
        during += [X[j] - X[j - 1] for j in chunk]
        i0 = chunk[0] - 1
        spans_d.append((X[i1] - X[i0]) / 1e3)
        first_gap.append(X[i0])
        last_gap.append(X[i1] - t_done)
    md = rec["metrics_delta"]
    d_steps, d_prompt = int(md["tern_steps_total"]), int(md["tern_prompt_tokens_total"])
    us = rec.get("usage")
    if us is not None:
        cached = (us.get("prompt_tokens_details") or {}).get("cached_tokens")
        prompt_ok = d_prompt == n_long and us["prompt_tokens"] == n_long and not cached
    else:  # a receipt from before usage was kept: its recorded check
        old = rec.get("checks", {})
        cached = old.get("cached_tokens")
        prompt_ok = bool(old.get("prompt_ok")) and d_prompt == n_long
    checks = {
        "chunk_threshold_ms": round(thr, 2),
        "window_chunk_steps_min_max": [min(win_chunk), max(win_chunk)],
        "window_chunk_steps_ok": min(win_chunk) == max(win_chunk) == n_mixed,
        "admission_steps_min_max": [min(win_fast), max(win_fast)],
        "admission_then_chunks_ok": all(order_ok),
        "last_step_token_minus_response_ms_min_max": [round(min(last_gap), 2), round(max(last_gap), 2)],
        "last_step_ok": max(abs(x) for x in last_gap) <= skew,
        "metrics_steps": d_steps,
        # every step between the two scrapes ran the S streams' tokens (and the prompt's chunks): the scrapes, each an
        # HTTP round trip, take several ~3 ms decode steps, so their count has no upper bound from the window
        "metrics_steps_ok": d_steps >= n_mixed + min(win_fast) and
        int(md["tern_step_tokens_total"]) == S * d_steps + n_long and
        int(md["tern_generation_tokens_total"]) == S * d_steps + 1,
        "metrics_prompt_tokens": d_prompt,
        "cached_tokens": cached,
        "prompt_ok": prompt_ok,
        "events_with_several_tokens": rec["multi"] if "multi" in rec else
        rec.get("checks", {}).get("events_with_several_tokens", 0),
        "first_chunk_step_starts_ms_after_send_min_max": [round(min(first_gap), 2), round(max(first_gap), 2)],
    }
    rec["checks"] = checks
    rec["ok"] = all(checks[k] for k in ("window_chunk_steps_ok", "admission_then_chunks_ok", "last_step_ok",
                                        "metrics_steps_ok", "prompt_ok"))
    r2 = lambda x, nd=2: round(x, nd)
    rec.update({
        "itl_ms_during": {"p50": r2(pct(during, 0.5)), "p99": r2(pct(during, 0.99)), "max": r2(max(during)),
                          "n": len(during)},
        "itl_ms_base": {"p50": r2(pct(base, 0.5)), "p99": r2(pct(base, 0.99)), "max": r2(max(base)), "n": len(base)},
        "ttft_ms": r2(t_done, 1),
        "prefill_tok_s": r2(n_long / (t_done / 1e3), 1),
        "decode_tok_s_during": r2(S * n_mixed / statistics.mean(spans_d), 1),
        "decode_tok_s_base": r2(sum(n_b) / statistics.mean(spans_b), 1) if spans_b else None,
    })
    rec.pop("tol_ms", None)
    return rec


def fmt(x, nd=1):
    return "-" if x is None else f"{x:,.{nd}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tern", default=os.path.join(HERE, "..", "tern"))
    ap.add_argument("-m", "--model")
    ap.add_argument("--reanalyze", metavar="RECEIPT", help="no run: the analysis of RECEIPT's recorded token times again "
                    "(its trials' numbers and checks), written to --out and --md")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("-t", "--threads", type=int, default=0, help="-t for tern serve (0: its default)")
    ap.add_argument("--budgets", default="256,512,1024,2048,4096", help="--batch-tokens values, comma-separated")
    ap.add_argument("--streams", type=int, default=16, help="decoding streams (S)")
    ap.add_argument("--short-tokens", type=int, default=32, help="each stream's prompt (token ids)")
    ap.add_argument("--long-tokens", type=int, default=32768, help="the long prompt (token ids)")
    ap.add_argument("--baseline-tokens", type=int, default=64, help="each stream's tokens before the long prompt")
    ap.add_argument("--tail-tokens", type=int, default=2, help="each stream's tokens after it")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-alone", action="store_true", help="skip the long prompt's TTFT with nothing else running")
    ap.add_argument("--count", choices=("auto", "text", "logprobs"), default="auto",
                    help="how a stream counts an event's tokens (auto: text for a tern synth model, else logprobs)")
    ap.add_argument("--server-args", default="", help="more tern serve options (quoted), e.g. '-ub 4096'")
    ap.add_argument("--timeout", type=float, default=600, help="seconds any one wait or request may take")
    ap.add_argument("--log-dir", default="/tmp")
    ap.add_argument("--out", required=True)
    ap.add_argument("--md", required=True)
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    if a.reanalyze:
        with open(a.reanalyze) as f:
            rec = json.load(f)
        for t in rec["trials"]:
            if "times_ms" in t:
                analyze(t)
        rec["reanalyzed"] = {"from": a.reanalyze, "by": "bench/mixed_itl.py --reanalyze",
                             "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        return report(rec, a.md, a.out)
    if not a.model:
        ap.error("-m MODEL is required (or --reanalyze RECEIPT)")
    sys.setswitchinterval(0.0005)  # 17 threads: a token's arrival is stamped within ~0.5 ms, not the default 5
    budgets = [int(x) for x in a.budgets.split(",") if x]
    S, P = a.streams, a.long_tokens
    # the context: the long prompt and its token; a stream's prompt and every token it can generate in a trial
    gen_max = a.baseline_tokens + math.ceil(P / 16) + a.tail_tokens + 64
    a.ctx = (max(P + 1, a.short_tokens + gen_max) + 255) // 256 * 256
    common = ["-m", a.model, "--device", a.device, "--parallel", str(S + 1), "-c", str(a.ctx)] + \
        (["-t", str(a.threads)] if a.threads else []) + a.server_args.split()
    os.makedirs(a.log_dir, exist_ok=True)
    rec = {"tool": "bench/mixed_itl.py", "model": a.model, "device": a.device, "streams": S,
           "short_tokens": a.short_tokens, "long_tokens": P, "baseline_tokens": a.baseline_tokens,
           "tail_tokens": a.tail_tokens, "budgets": budgets, "rounds": a.rounds, "ctx": a.ctx,
           "server_args": common, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "note": a.note,
           "argv": sys.argv, "trials": []}
    try:
        rec["commit"] = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                                       cwd=HERE).stdout.strip()
        rec["dirty"] = bool(subprocess.run(["git", "status", "--porcelain", "-uno"], capture_output=True, text=True,
                                           cwd=HERE).stdout.strip())
    except OSError:
        pass
    for r in range(a.rounds):
        for b in (budgets if r % 2 == 0 else budgets[::-1]):
            args = common + ["--batch-tokens", str(b)]
            srv = None
            t0 = time.time()
            try:
                srv = Server(a.tern, args, os.path.join(a.log_dir, f"mixed-B{b}-r{r + 1}.log"), a.timeout)
                a.count_mode = count_mode(srv.url, a.count)
                rec["count"] = a.count_mode
                w_long = min(P, chunk_of(b, S) * 3 // 2 + 1)  # a whole chunk and a part of one
                w = trial(srv.url, a, b, w_long, 4, 1, f"warm{r}-{b}", False)
                log(f"B={b} r{r + 1} warm-up: {S} streams + a {w_long}-token prompt, ITL p50 "
                    f"{w['itl_ms_during']['p50']} ms during / {w['itl_ms_base']['p50']} base")
                t = trial(srv.url, a, b, P, a.baseline_tokens, a.tail_tokens, f"r{r}-{b}", not a.no_alone)
                t.update({"round": r + 1, "server_cmd": srv.cmd, "banner": srv.banner})
            except Exception as e:  # noqa: BLE001 (a failed trial is a row of the receipt)
                t = {"round": r + 1, "budget": b, "ok": False, "error": f"{type(e).__name__}: {str(e)[-400:]}",
                     "server_cmd": srv.cmd if srv else [a.tern, "serve"] + args}
            finally:
                if srv:
                    srv.stop()
            t["wall_s"] = round(time.time() - t0, 1)
            rec["trials"].append(t)
            if "itl_ms_during" in t:
                d, bs = t["itl_ms_during"], t["itl_ms_base"]
                log(f"B={b} r{r + 1}: chunk {t['chunk']} x {t['n_mixed']} steps; ITL during p50 {d['p50']} p99 "
                    f"{d['p99']} max {d['max']} ms (base {bs['p50']} / {bs['p99']} / {bs['max']}); TTFT {t['ttft_ms']} "
                    f"ms (alone {t.get('ttft_alone_ms')}); decode {t['decode_tok_s_during']} tok/s during, "
                    f"{t['decode_tok_s_base']} base; checks {'ok' if t['ok'] else 'FAILED ' + json.dumps(t['checks'])}"
                    f"; {t['wall_s']} s")
            else:
                log(f"B={b} r{r + 1}: FAILED {t['error']}")

    return report(rec, a.md, a.out)


def report(rec, md_path, out_path):
    """The markdown table (md_path) and the receipt (out_path) of rec; prints the table and the summary line (gpu_check's
    note); 1 when a trial failed."""
    budgets, S, P, rounds = rec["budgets"], rec["streams"], rec["long_tokens"], rec["rounds"]
    common = rec["server_args"]
    failures = [f"B={t['budget']} r{t['round']}: {t.get('error') or t.get('checks')}" for t in rec["trials"]
                if not t.get("ok")]
    # the table: a row a budget, each cell round 1 / round 2 ...
    def cell(b, f, nd=1):
        rows = sorted((t for t in rec["trials"] if t["budget"] == b), key=lambda t: t["round"])
        return " / ".join(fmt(f(t), nd) if "itl_ms_during" in t else "FAIL" for t in rows)

    tern = os.path.basename(rec["model"])
    L = [f"# Decode ITL while a {P:,}-token prompt prefills, by chunk budget (issue 26): {tern}, {rec['device']}, "
         f"commit {rec.get('commit') or '?'}{' (dirty)' if rec.get('dirty') else ''}", "",
         f"Server: `tern serve {' '.join(common)} --batch-tokens B`, fresh for each budget and round. {S} streams "
         f"decode (prompts of {rec['short_tokens']} token ids, greedy, ignore_eos); once all decode and each has "
         f"{rec['baseline_tokens']} baseline tokens, one {P:,}-token prompt (ids, max_tokens 1) is sent. A step runs the "
         f"{S} decode tokens, then a chunk of max(B - {S}, 16) prompt tokens; the prompt takes 'steps' such steps, "
         f"each giving every stream one token. ITL: gaps between a stream's token arrivals (SSE), pooled over the "
         f"streams: during = its gaps of those steps; base = before the prompt was sent. TTFT: sending the prompt to "
         f"its response; alone: the same length with nothing else running. Tokens an event counted by "
         f"{rec.get('count', '?')} (bench/mixed_itl.py). Cells: round "
         f"{' / '.join(str(i + 1) for i in range(rounds))} (round 2 ran the budgets in reverse order).", "",
         "| budget B | chunk | steps | ITL p50 during | ITL p99 during | ITL max during | ITL p50 base | ITL p99 base "
         "| ITL max base | TTFT, s | TTFT alone, s | decode tok/s during | decode tok/s base |",
         "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for b in budgets:
        L.append(f"| {b} | {chunk_of(b, S)} | {math.ceil(P / chunk_of(b, S))} | "
                 f"{cell(b, lambda t: t['itl_ms_during']['p50'])} | {cell(b, lambda t: t['itl_ms_during']['p99'])} | "
                 f"{cell(b, lambda t: t['itl_ms_during']['max'])} | {cell(b, lambda t: t['itl_ms_base']['p50'])} | "
                 f"{cell(b, lambda t: t['itl_ms_base']['p99'])} | {cell(b, lambda t: t['itl_ms_base']['max'])} | "
                 f"{cell(b, lambda t: t['ttft_ms'] / 1e3, 2)} | "
                 f"{cell(b, lambda t: t['ttft_alone_ms'] / 1e3 if 'ttft_alone_ms' in t else None, 2)} | "
                 f"{cell(b, lambda t: t['decode_tok_s_during'])} | {cell(b, lambda t: t['decode_tok_s_base'])} |")
    adm = [t["checks"]["admission_steps_min_max"] for t in rec["trials"] if "checks" in t]
    L += ["", "ITL in ms. Cross-checks (every trial; bench/mixed_itl.py analyze says why): after the prompt is sent, a "
          "stream's gaps are pure decode steps while the server admits it (" +
          (f"{min(x[0] for x in adm)}-{max(x[1] for x in adm)} a stream here" if adm else "-") +
          "), then exactly 'steps' chunk steps (each slower than any pure decode step), the last one's token within "
          "10 ms of the prompt's response; /metrics between its two scrapes: at least steps + the admission's steps, "
          "each with the S streams' tokens (step tokens = S x steps + the prompt, generated = S x steps + 1); prompt "
          "tokens = the prompt (nothing cached); events carrying several tokens: "
          f"{sum(t['checks']['events_with_several_tokens'] for t in rec['trials'] if 'checks' in t)} in all."]
    if failures:
        L.append("FAILED: " + "; ".join(failures)[:1500])
    md = "\n".join(L) + "\n"
    with open(md_path, "w") as f:
        f.write(md)
    with open(out_path, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(md)
    def med(b, f):  # over the rounds that ran
        v = [f(t) for t in rec["trials"] if t["budget"] == b and "itl_ms_during" in t]
        return statistics.median(v) if v else None

    summ = ", ".join(f"B{b} {fmt(med(b, lambda t: t['itl_ms_during']['p50']))}/"
                     f"{fmt(med(b, lambda t: t['itl_ms_during']['p99']))} ms TTFT "
                     f"{fmt(med(b, lambda t: t['ttft_ms'] / 1e3), 2)} s" for b in budgets)
    base = med(budgets[0], lambda t: t["itl_ms_base"]["p50"])
    log(f"{'FAIL' if failures else 'DONE'} {S} streams + {P} tokens, ITL p50/p99 during: {summ}; base p50 "
        f"{fmt(base)} ms{'; ' + str(len(failures)) + ' failed' if failures else ''}")
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # the last line is gpu_check's note either way
        log(f"FAIL mixed_itl: {type(e).__name__}: {str(e)[-300:]}".replace("\n", " "))
        sys.exit(1)
