#!/usr/bin/env python3
"""serve_prefix: time to first token of a chat's second turn against a running `tern serve`, the prefix cache's case.

Turn 1: a long system message (--system-words words) and a question, answered greedily (--gen tokens). Turn 2: the
same conversation plus the answer and a new question. Prints and (--out) writes both turns' prompt tokens,
cached_tokens and time to first token, median of --rounds conversations (each with its own system message, so a
round does not reuse the last one's blocks).

--ids N: the same through /v1/completions with token ids, for models without a tokenizer or chat template (`tern
synth` files): turn 1 is N random ids (the system message) + 16 (the question), turn 2 turn 1's ids + the answer's
ids (parsed from the "[id]" texts such a model returns, else /tokenize of the answer) + 16 new ids; ignore_eos, so the
answer is always --gen tokens.

Several --url (LABEL=URL, e.g. on=http://127.0.0.1:8081 off=http://127.0.0.1:8082: servers started with and without
--no-prefix-cache) are interleaved a round at a time (MEASURE.md: A/B, never A then B), each with its own
conversations. Standard library only (no openai package); every request to the given URLs, bounded by --timeout.
run() is the same as a function (bench/serve_receipt.py imports it).

  python3 bench/serve_prefix.py --url http://127.0.0.1:8080 --rounds 3
  python3 bench/serve_prefix.py --url on=http://127.0.0.1:8081 --url off=http://127.0.0.1:8082 --ids 1500 --rounds 5
"""
import argparse
import http.client
import json
import os
import re
import statistics
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_load import model_info, random_ids  # noqa: E402


def post(u, path, body, timeout, key):
    h = {"Content-Type": "application/json"}
    if key:
        h["Authorization"] = "Bearer " + key
    c = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    c.request("POST", path, body=json.dumps(body), headers=h)
    return c, c.getresponse()


def stream(u, path, body, timeout, key):
    """One streamed request: (time to first content, text, usage)."""
    body = dict(body, temperature=0, stream=True, stream_options={"include_usage": True})
    t0 = time.perf_counter()
    c, r = post(u, path, body, timeout, key)
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:200]!r}")
    ttft, text, usage, buf = None, "", None, b""
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
                raise RuntimeError(f"stream error: {j['error']}")
            if j.get("usage"):
                usage = j["usage"]
            if j.get("choices"):
                ch = j["choices"][0]
                piece = ch["delta"].get("content") if "delta" in ch else ch.get("text")
                if piece:
                    if ttft is None:
                        ttft = time.perf_counter() - t0
                    text += piece
    c.close()
    return ttft, text, usage


def answer_ids(u, text, timeout, key):
    """The ids of a generated text: "[id][id]..." from a model without a tokenizer, else /tokenize's."""
    if re.fullmatch(r"(\[\d+\])+", text):
        return [int(x) for x in re.findall(r"\d+", text)]
    c, r = post(u, "/tokenize", {"content": text, "add_special": False}, timeout, key)
    j = json.loads(r.read())
    c.close()
    return j["tokens"]


def conversation(u, k, a, n_vocab, tag):
    """One conversation's two turns on one server: the row of the receipt."""
    if a.ids:
        p1 = random_ids(a.ids, n_vocab, f"{tag}-system-{k}") + random_ids(16, n_vocab, f"{tag}-q1-{k}")
        b = {"model": "m", "max_tokens": a.gen, "ignore_eos": True}
        t1, ans, u1 = stream(u, "/v1/completions", dict(b, prompt=p1), a.timeout, a.api_key)
        p2 = p1 + answer_ids(u, ans, a.timeout, a.api_key) + random_ids(16, n_vocab, f"{tag}-q2-{k}")
        t2, _, u2 = stream(u, "/v1/completions", dict(b, prompt=p2), a.timeout, a.api_key)
    else:
        system = f"Conversation {k} ({tag}). " + " ".join(f"Fact {i}: item {i * 31 % 97} is blue."
                                                         for i in range(a.system_words // 6))
        m1 = [{"role": "system", "content": system}, {"role": "user", "content": "What colour is item 5?"}]
        t1, ans, u1 = stream(u, "/v1/chat/completions", {"model": "m", "messages": m1, "max_tokens": a.gen},
                             a.timeout, a.api_key)
        m2 = m1 + [{"role": "assistant", "content": ans}, {"role": "user", "content": "And item 7?"}]
        t2, _, u2 = stream(u, "/v1/chat/completions", {"model": "m", "messages": m2, "max_tokens": a.gen},
                           a.timeout, a.api_key)
    return {"turn1_prompt": u1["prompt_tokens"], "turn1_cached": u1["prompt_tokens_details"]["cached_tokens"],
            "turn1_ttft_ms": round(t1 * 1e3, 2), "turn2_prompt": u2["prompt_tokens"],
            "turn2_cached": u2["prompt_tokens_details"]["cached_tokens"], "turn2_ttft_ms": round(t2 * 1e3, 2)}


def run(urls, rounds=3, ids=0, system_words=300, gen=16, api_key=None, timeout=300, note="", log=print):
    """urls: [(label, url)]; rounds interleaved across them. Returns the receipt dict (what --out writes)."""
    a = argparse.Namespace(ids=ids, system_words=system_words, gen=gen, api_key=api_key, timeout=timeout)
    tag = f"{time.time():.0f}"  # a fresh conversation each run, so no earlier run's blocks are cached
    us = [(lab, url, urllib.parse.urlparse(url)) for lab, url in urls]
    vocab = {lab: (model_info(url, timeout, api_key)["meta"]["n_vocab"] if ids else 0) for lab, url, _ in us}
    rows = {lab: [] for lab, _, _ in us}
    for k in range(rounds):
        for lab, url, u in us:
            rows[lab].append(conversation(u, k, a, vocab[lab], f"{tag}-{lab}"))
            log(f"{lab} round {k + 1}: {rows[lab][-1]}")
    med = {lab: {key: statistics.median(r[key] for r in rows[lab]) for key in rows[lab][0]} for lab in rows}
    return {"tool": "bench/serve_prefix.py", "urls": dict((lab, url) for lab, url, _ in us), "prompt": "ids" if ids else "chat",
            "system": ids or system_words, "gen": gen, "rounds": rows, "median": med, "note": note,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", action="append", help="[LABEL=]URL, repeatable (default http://127.0.0.1:8080)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ids", type=int, default=0, help="token ids in the system part (completions with ids)")
    ap.add_argument("--system-words", type=int, default=300)
    ap.add_argument("--gen", type=int, default=16)
    ap.add_argument("--api-key")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--out")
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    urls = [(x.split("=", 1) if "=" in x.split("//")[0] else (x, x)) for x in (a.url or ["http://127.0.0.1:8080"])]
    out = run([tuple(x) for x in urls], a.rounds, a.ids, a.system_words, a.gen, a.api_key, a.timeout, a.note,
              log=lambda s: print(s, flush=True))
    for lab, m in out["median"].items():
        print(f"{lab}: median of {a.rounds}: turn 1 TTFT {m['turn1_ttft_ms']} ms ({m['turn1_prompt']} prompt tokens), "
              f"turn 2 TTFT {m['turn2_ttft_ms']} ms ({m['turn2_cached']} of {m['turn2_prompt']} cached)")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
