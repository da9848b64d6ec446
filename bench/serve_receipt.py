#!/usr/bin/env python3
"""serve_receipt: issue 27's speed receipts of `tern serve` in one command (bench/gpu_check.sh step serve).

  python3 bench/serve_receipt.py -m MODEL [--device cuda] [--streams 64] [--prompt-tokens 512] [--gen-tokens 128]
                                 [--rounds 2] [--lcpp-bin /tmp/lcpp/build/bin] --out R.json --md R.md --log-dir DIR

On one model file, with prompts of token ids (bench/serve_load.py --ids: exact lengths, and `tern synth` files have
no tokenizer):
 (a) one stream through `tern serve` (prompt P, G generated, greedy, ignore_eos): its decode tok/s ((G - 1) / time
     from the first token to the last), against `tern bench -p P -n G` tg<G> (and tg<G> at depth P, the stream's
     own depth) on the same file, in the server's matmul order (its start-up line: a CUDA server of --parallel > 1
     takes the f16 order, one-sequence `tern bench` the GEMV order; TERN_GEMV_CHUNK gives bench the server's), and
     beside them tg<G> in bench's own order (what a --parallel 1 server decodes at); --single-reps requests a round,
     median; rounds interleaved with the bench runs; and one stream of a --short-prompt-tokens prompt (8: depth ~0, as
     tg<G> itself), against tg<G>;
 (b) --streams concurrent streams (prompt P, G each): aggregate generated tok/s (prefills included) and the aggregate
     while all streams decode, TTFT p50/p99, ITL p50/p99, a round each; beside llama.cpp's llama-batched-bench figure of the same box and shape (recorded in shared/peers/README.md:
     4,481 tok/s aggregate decode at 64 sequences, pp 512, tg 128; a batch benchmark, not a server) and, when
     --lcpp-bin holds llama-batched-bench, its live run on the same file (-npl 1,N);
 (c) a chat's second turn (bench/serve_prefix.py --ids): TTFT with the prefix cache on (this server) vs off (a second
     server with --no-prefix-cache, same flags), --prefix-rounds conversations interleaved between the two.
Both servers: --parallel N (at least --streams), -c large enough for (a)-(c), --port 0; a warm-up (one stream, then N
streams of 8 tokens) before anything is timed. Writes the receipt (--out, JSON: every round, the commands) and a
markdown table (--md); the last line printed is a one-line summary (gpu_check's note), starting PASS when every request
completed and the one-stream decode is within 5% of tern bench at the same depth (issue 27's bar: the short-prompt
stream against tg<G>, the P-token one against tg<G> at depth P), else FAIL. Standard library only.
Server logs: DIR/serve-{on,off}.log. Every child process is stopped on exit.
"""
import argparse
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve_load  # noqa: E402
import serve_prefix  # noqa: E402

PEER_RECORDED = {"source": "shared/peers/README.md (one H200, 2026-12-01, synthetic Llama-3-8B Q4_0, -fa 1)",
                 "tool": "llama-batched-bench (pp 512, tg 128 a sequence), not a server",
                 "S_TG": {1: 320, 4: 906, 16: 2058, 64: 4481}}


def log(*a):
    print(*a, flush=True)


class Server:
    """`tern serve` on a free port (--port 0), its stderr in a log file; ready when /health says 200."""

    def __init__(self, tern, args, logpath, timeout=600):
        self.cmd = [tern, "serve", "--port", "0"] + args
        self.logpath = logpath
        self.logf = open(logpath, "w+")
        log("$ " + " ".join(shlex.quote(x) for x in self.cmd))
        self.p = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=self.logf)
        self.url, t0 = None, time.time()
        while time.time() - t0 < timeout:
            if self.url is None:
                m = re.search(r"listening on http://[^:]+:(\d+)", open(logpath).read())
                if m:
                    self.url = f"http://127.0.0.1:{m.group(1)}"
            if self.url is not None:
                try:
                    with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                        if r.status == 200:
                            break
                except OSError:  # 503 while loading, or not yet listening
                    pass
            if self.p.poll() is not None:
                raise RuntimeError(f"tern serve exited ({self.p.returncode}): {open(logpath).read()[-1500:]}")
            time.sleep(0.2)
        else:
            self.stop()
            raise RuntimeError(f"tern serve not ready in {timeout} s: {open(logpath).read()[-1500:]}")
        self.banner = [ln.strip() for ln in open(logpath) if ln.startswith("tern serve:")]
        log("\n".join(self.banner))

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.logf.close()


def server_order(banner):
    """The matmul order a server's start-up line names (cli/serve.c): 2 the f16 order, 1 the chunk order, else None
    (one sequence's order, or the CPU)."""
    text = " ".join(banner) if isinstance(banner, list) else banner
    return 2 if "f16-order matmuls" in text else 1 if "chunk-order matmuls" in text else None


def tern_bench(a, extra, receipt, order=None):
    """tern bench; order: TERN_GEMV_CHUNK for it (the server's, so that one stream compares like for like: a server of
    --parallel > 1 takes the many-sequence order, which one-sequence `tern bench` does not), None: bench's own."""
    cmd = [a.tern, "bench", "-m", a.model, "--device", a.device, "-r", str(a.bench_reps), "-o", "jsonl",
           "--receipt", receipt] + a.threads_args + extra
    env = dict(os.environ)
    if order is not None:
        env["TERN_GEMV_CHUNK"] = str(order)
    log("$ " + ("" if order is None else f"TERN_GEMV_CHUNK={order} ") + " ".join(shlex.quote(x) for x in cmd))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"tern bench failed ({r.returncode}): {r.stderr[-1500:]}")
    rows = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    return {"cmd": ("" if order is None else f"TERN_GEMV_CHUNK={order} ") + " ".join(cmd), "rows": rows}


def bench_tok_s(b, n_prompt, n_gen):
    for row in b["rows"]:
        if row["n_prompt"] == n_prompt and row["n_gen"] == n_gen:
            return row["median_tok_s"]
    return None


def peer_batched(a, npl):
    exe = os.path.join(a.lcpp_bin, "llama-batched-bench") if a.lcpp_bin else ""
    if not exe or not os.access(exe, os.X_OK):
        return {"skipped": f"no llama-batched-bench in {a.lcpp_bin or '(no --lcpp-bin)'}"}
    ctx = max(npl) * (a.prompt_tokens + a.gen_tokens) + 1024
    cmd = [exe, "-m", a.model, "-ngl", "99" if a.device == "cuda" else "0", "-fa", "1", "-c", str(ctx), "-b", "2048",
           "-ub", "512", "-npp", str(a.prompt_tokens), "-ntg", str(a.gen_tokens), "-npl", ",".join(map(str, npl)),
           "--output-format", "jsonl"]
    if a.threads:
        cmd += ["-t", str(a.threads)]
    log("$ " + " ".join(shlex.quote(x) for x in cmd))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        return {"cmd": " ".join(cmd), "error": "timed out"}
    rows = []
    for x in (r.stdout + "\n" + r.stderr).splitlines():
        x = x[x.find("{"):] if "{" in x else ""
        try:
            j = json.loads(x)
        except ValueError:
            continue
        if "speed_tg" in j:
            rows.append(j)
    if r.returncode != 0 or not rows:
        return {"cmd": " ".join(cmd), "error": f"rc {r.returncode}: {(r.stderr or r.stdout)[-800:]}"}
    return {"cmd": " ".join(cmd), "S_TG": {j["pl"]: round(j["speed_tg"], 2) for j in rows},
            "S_PP": {j["pl"]: round(j["speed_pp"], 2) for j in rows}, "rows": rows}


def fmt(x, nd=1):
    if x is None:
        return "-"
    return f"{x:,.{nd}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tern", default=os.path.join(HERE, "..", "tern"))
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("-t", "--threads", type=int, default=0, help="-t for tern serve / bench / the peer (0: theirs)")
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--single-reps", type=int, default=3, help="one-stream requests a round (median)")
    ap.add_argument("--short-prompt-tokens", type=int, default=8,
                    help="the depth-0 stream's prompt (its decode against tg<G>, which starts from an empty context)")
    ap.add_argument("--bench-reps", type=int, default=3, help="tern bench -r")
    ap.add_argument("--prefix-ids", type=int, default=1500, help="ids of a conversation's first turn (system part)")
    ap.add_argument("--prefix-gen", type=int, default=32)
    ap.add_argument("--prefix-rounds", type=int, default=5)
    ap.add_argument("--lcpp-bin", default="/tmp/lcpp/build/bin")
    ap.add_argument("--server-args", default="", help="more tern serve options for both servers (quoted)")
    ap.add_argument("--log-dir", default="/tmp")
    ap.add_argument("--out", required=True)
    ap.add_argument("--md", required=True)
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    a.threads_args = ["-t", str(a.threads)] if a.threads else []
    N, P, G = a.streams, a.prompt_tokens, a.gen_tokens
    need = max(P + G, a.prefix_ids + 16 + a.prefix_gen + 16) + 64
    ctx = (need + 255) // 256 * 256
    srv_args = ["-m", a.model, "--device", a.device, "--parallel", str(N), "-c", str(ctx)] + a.threads_args + \
        shlex.split(a.server_args)
    os.makedirs(a.log_dir, exist_ok=True)
    rec = {"tool": "bench/serve_receipt.py", "model": a.model, "device": a.device, "streams": N, "prompt_tokens": P,
           "gen_tokens": G, "server_args": srv_args, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "note": a.note, "argv": sys.argv}
    try:
        rec["commit"] = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                                       cwd=HERE).stdout.strip()
        rec["dirty"] = bool(subprocess.run(["git", "status", "--porcelain", "-uno"], capture_output=True, text=True,
                                           cwd=HERE).stdout.strip())
    except OSError:
        pass
    servers = []
    try:
        on = Server(a.tern, srv_args, os.path.join(a.log_dir, "serve-on.log"))
        servers.append(on)
        rec["server_banner"] = on.banner
        # warm-up: one stream, then N at once (the batch shapes of (b)); not timed
        for n, g in ((1, 16), (N, 8)):
            w = serve_load.run(on.url, n, P, g, ids=True, seed=999)
            log(f"warm-up {n} streams: {w['completed']}/{n} completed, errors {w['errors']}")
        # (a) one stream vs tern bench, interleaved a round at a time
        rec["single"] = []
        order = server_order(on.banner)
        rec["server_order"] = order
        for r in range(a.rounds):
            b = tern_bench(a, ["-p", str(P), "-n", str(G)], os.path.join(a.log_dir, f"serve-bench-r{r + 1}.json"), order)
            bd = tern_bench(a, ["-p", "0", "-n", str(G), "--depth", str(P)],
                            os.path.join(a.log_dir, f"serve-bench-d{P}-r{r + 1}.json"), order)
            # one sequence in its own engine (bench's own order), beside: what a --parallel 1 server would decode at
            bo = tern_bench(a, ["-p", "0", "-n", str(G)], os.path.join(a.log_dir, f"serve-bench-own-r{r + 1}.json")) \
                if order else None
            reqs = [serve_load.run(on.url, 1, P, G, ids=True, seed=10 * r + k) for k in range(a.single_reps)]
            dec = [q["decode_tok_s_stream_median"] for q in reqs if q["decode_tok_s_stream_median"]]
            sreqs = [serve_load.run(on.url, 1, a.short_prompt_tokens, G, ids=True, seed=10 * r + k + 5)
                     for k in range(a.single_reps)]
            sdec = [q["decode_tok_s_stream_median"] for q in sreqs if q["decode_tok_s_stream_median"]]
            row = {"round": r + 1, "bench_pp": bench_tok_s(b, P, 0), "bench_tg": bench_tok_s(b, 0, G),
                   "bench_tg_depth": bench_tok_s(bd, 0, G), "bench_tg_own": bench_tok_s(bo, 0, G) if bo else None,
                   "serve_decode": round(statistics.median(dec), 2) if dec else None,
                   "serve_decode_samples": dec, "serve_ttft_ms": [q["ttft_ms_p50"] for q in reqs],
                   "serve_decode_short": round(statistics.median(sdec), 2) if sdec else None,
                   "serve_decode_short_samples": sdec, "short_prompt_tokens": a.short_prompt_tokens,
                   "errors": sum(q["n_errors"] for q in reqs) + sum(q["n_errors"] for q in sreqs), "bench_cmd": b["cmd"], "bench_depth_cmd": bd["cmd"],
                   "requests": reqs, "requests_short": sreqs}
            rec["single"].append(row)
            log(f"(a) round {r + 1}: serve one stream {row['serve_decode']} tok/s (samples {dec}), with a "
                f"{a.short_prompt_tokens}-token prompt {row['serve_decode_short']} (samples {sdec}); tern bench "
                f"tg{G} {row['bench_tg']}, tg{G} @ d{P} {row['bench_tg_depth']}, pp{P} {row['bench_pp']}")
        # (b) N streams
        rec["multi"] = []
        for r in range(a.rounds):
            q = serve_load.run(on.url, N, P, G, ids=True, seed=100 + r)
            q["round"] = r + 1
            rec["multi"].append(q)
            log(f"(b) round {r + 1}: " + serve_load.line(q))
        # (c) the second chat turn, cache on vs off, interleaved
        off = Server(a.tern, srv_args + ["--no-prefix-cache"], os.path.join(a.log_dir, "serve-off.log"))
        servers.append(off)
        rec["prefix"] = serve_prefix.run([("on", on.url), ("off", off.url)], a.prefix_rounds, ids=a.prefix_ids,
                                         gen=a.prefix_gen, log=lambda s: log("(c) " + s))
    finally:
        for s in servers:
            s.stop()
    rec["peer"] = {"recorded": PEER_RECORDED, "live": peer_batched(a, sorted({1, N}))}

    # the table
    sg = rec["single"]
    med = lambda k, rows: statistics.median([x[k] for x in rows if x[k] is not None]) if any(
        x[k] is not None for x in rows) else None
    s_dec, s_tg, s_tgd = med("serve_decode", sg), med("bench_tg", sg), med("bench_tg_depth", sg)
    s_short = med("serve_decode_short", sg)
    ratio = s_dec / s_tg if s_dec and s_tg else None
    ratio_d = s_dec / s_tgd if s_dec and s_tgd else None
    ratio_s = s_short / s_tg if s_short and s_tg else None
    mu = rec["multi"]
    pm = rec["prefix"]["median"]
    live = rec["peer"]["live"].get("S_TG", {})
    rec_peer = PEER_RECORDED["S_TG"].get(N) if (P, G) == (512, 128) else None
    errors = sum(x["errors"] for x in sg) + sum(x["n_errors"] for x in mu)
    rec["summary"] = {"serve_decode_tok_s": s_dec, "bench_tg_tok_s": s_tg, "bench_tg_depth_tok_s": s_tgd,
                      "ratio_serve_over_bench_tg": ratio, "ratio_serve_over_bench_tg_depth": ratio_d,
                      "serve_decode_short_tok_s": s_short, "ratio_serve_short_over_bench_tg": ratio_s,
                      "aggregate_gen_tok_s": [x["aggregate_gen_tok_s"] for x in mu],
                      "all_decoding_tok_s": [x["all_decoding_tok_s"] for x in mu], "errors": errors,
                      "turn2_ttft_ms_on": pm["on"]["turn2_ttft_ms"], "turn2_ttft_ms_off": pm["off"]["turn2_ttft_ms"]}
    rr = lambda k, rows, nd=1: " / ".join(fmt(x[k], nd) for x in rows)
    order = rec.get("server_order")
    oname = {1: " (the server's order: chunk)", 2: " (the server's order: f16)"}.get(order, "")
    s_own = med("bench_tg_own", sg) if order else None
    o_cost = s_tg / s_own if s_tg and s_own else None
    L = [f"# tern serve receipts (issue 27): {os.path.basename(a.model)}, {a.device}, commit {rec.get('commit') or '?'}"
         f"{' (dirty)' if rec.get('dirty') else ''}",
         "", f"Server: `tern serve {' '.join(srv_args)}`; prompts of token ids (bench/serve_load.py --ids), greedy, "
         f"ignore_eos. Rounds: {' / '.join(f'r{i + 1}' for i in range(a.rounds))}. The one-stream bars compare with `tern "
         f"bench` in the server's matmul order{' (TERN_GEMV_CHUNK=' + str(order) + ')' if order else ''}.", "",
         "| measure | tern | llama.cpp | note |", "|---|---:|---:|---|",
         f"| one stream through tern serve, decode tok/s | {rr('serve_decode', sg, 2)} | - | prompt {P}, {G} generated; "
         f"median of {a.single_reps} requests a round; (G-1)/(last token - first token) |",
         f"| tern bench tg{G}{oname}, tok/s | {rr('bench_tg', sg, 2)} | "
         f"{fmt(live.get(1), 2) if live else fmt(PEER_RECORDED['S_TG'][1] if (P, G) == (512, 128) else None, 0)} | "
         f"`tern bench -p {P} -n {G} -r {a.bench_reps}`; llama.cpp: llama-batched-bench S_TG at 1 sequence "
         f"({'live, same file' if live else 'recorded, shared/peers/README.md'}) |",
         f"| tern bench tg{G} @ depth {P}{oname}, tok/s | {rr('bench_tg_depth', sg, 2)} | - | the stream's own depth |",
         ] + ([f"| tern bench tg{G}, one sequence in its own engine, tok/s | {rr('bench_tg_own', sg, 2)} | - | what a "
               f"`--parallel 1` server decodes at: a server of more sequences takes the order above (one per engine, "
               f"so that a sequence's tokens do not depend on its batch), {fmt(o_cost * 100 if o_cost else None, 1)}% "
               f"of this for one stream |"] if order else []) + [
         f"| one stream, {a.short_prompt_tokens}-token prompt, decode tok/s | {rr('serve_decode_short', sg, 2)} | - | "
         f"depth ~0, as tg{G}; / tg{G}: {fmt(ratio_s * 100 if ratio_s else None, 1)}% (issue 27: within 5%) |",
         f"| one stream / tg{G} | {fmt(ratio * 100 if ratio else None, 1)}% | - | issue 27: within 5%; / tg{G} @ d{P}: "
         f"{fmt(ratio_d * 100 if ratio_d else None, 1)}% |",
         f"| {N} streams, aggregate generated tok/s | {rr('aggregate_gen_tok_s', mu)} | "
         f"{fmt(live.get(N), 1) if live else '-'} (live); {fmt(rec_peer, 0)} (recorded) | llama.cpp's is "
         f"llama-batched-bench's S_TG at {N} sequences (pp {P}, tg {G}), a batch benchmark, not a server; tern's: all "
         f"generated tokens / the time from sending to the last token (prefills included) |",
         f"| {N} streams, generated tok/s while all decode | {rr('all_decoding_tok_s', mu)} | "
         f"{fmt(live.get(N), 1) if live else '-'} (live); {fmt(rec_peer, 0)} (recorded) | tokens after the last stream's "
         f"first token / the time from then to the last token: the closer match to S_TG (decode time only) |",
         f"| {N} streams, TTFT p50, ms | {rr('ttft_ms_p50', mu)} | - | time to first token, all {N} sent at once |",
         f"| {N} streams, TTFT p99, ms | {rr('ttft_ms_p99', mu)} | - | |",
         f"| {N} streams, ITL p50, ms | {rr('itl_ms_p50', mu, 2)} | - | inter-token latency: gaps between a stream's tokens |",
         f"| {N} streams, ITL p99, ms | {rr('itl_ms_p99', mu, 2)} | - | |",
         f"| {N} streams, decode tok/s a stream (median) | {rr('decode_tok_s_stream_median', mu, 2)} | - | |",
         f"| 2nd chat turn TTFT, prefix cache on, ms | {fmt(pm['on']['turn2_ttft_ms'], 2)} | - | {pm['on']['turn2_cached']:.0f} of "
         f"{pm['on']['turn2_prompt']:.0f} prompt tokens cached; median of {a.prefix_rounds} conversations |",
         f"| 2nd chat turn TTFT, prefix cache off, ms | {fmt(pm['off']['turn2_ttft_ms'], 2)} | - | `--no-prefix-cache`, same "
         f"flags, interleaved; turn 1 TTFT on / off {fmt(pm['on']['turn1_ttft_ms'], 2)} / {fmt(pm['off']['turn1_ttft_ms'], 2)} ms |",
         ""]
    if not live:
        L.append(f"llama.cpp live run: {rec['peer']['live'].get('skipped') or rec['peer']['live'].get('error')}")
    else:
        L.append(f"llama.cpp live run: `{rec['peer']['live']['cmd']}`")
    if errors:
        L.append(f"ERRORS: {errors} requests failed: "
                 f"{[e for x in mu for e in x['errors']][:3] + [e for x in sg for q in x['requests'] for e in q['errors']][:3]}")
    md = "\n".join(L) + "\n"
    with open(a.md, "w") as f:
        f.write(md)
    with open(a.out, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    ok = errors == 0 and ratio_s is not None and ratio_s >= 0.95 and ratio_d is not None and ratio_d >= 0.95
    agg = "/".join(fmt(x["aggregate_gen_tok_s"], 0) for x in mu)
    agd = "/".join(fmt(x["all_decoding_tok_s"], 0) for x in mu)
    peer = fmt(live.get(N), 0) + " live" if live else (fmt(rec_peer, 0) + " recorded" if rec_peer else "-")
    print(md)
    log(f"{'PASS' if ok else 'FAIL'} 1 stream {fmt(s_dec)} tok/s = {fmt(ratio_d * 100 if ratio_d else None)}% of tg{G} @ "
        f"d{P} {fmt(s_tgd)}, {fmt(ratio * 100 if ratio else None)}% of tg{G} {fmt(s_tg)}; with a {a.short_prompt_tokens}-token "
        f"prompt {fmt(s_short)} = {fmt(ratio_s * 100 if ratio_s else None)}% of tg{G}; {N} streams {agg} tok/s, all decoding {agd} (llama-batched-bench S_TG {peer}), TTFT p50 {fmt(mu[-1]['ttft_ms_p50'], 0)} "
        f"ms, ITL p50 {fmt(mu[-1]['itl_ms_p50'])} ms; turn 2 TTFT on/off {fmt(pm['on']['turn2_ttft_ms'])}/"
        f"{fmt(pm['off']['turn2_ttft_ms'])} ms{'; ' + str(errors) + ' errors' if errors else ''}")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # the last line is gpu_check's note either way
        log(f"FAIL serve_receipt: {type(e).__name__}: {str(e)[-300:]}".replace("\n", " "))
        sys.exit(1)
