#!/usr/bin/env python3
"""serve_prefix: time to first token of a chat's second turn against a running `tern serve`, the prefix cache's case.

Turn 1: a long system message (--system-words words) and a question, answered greedily (--gen tokens). Turn 2: the
same conversation plus the answer and a new question. Prints and (--out) writes both turns' prompt tokens,
cached_tokens and time to first token, median of --rounds conversations (each with its own system message, so a
round does not reuse the last one's blocks). Run it against a server started with and without --no-prefix-cache.
Standard library only; every request to the given URL, bounded by --timeout.

  python3 bench/serve_prefix.py --url http://127.0.0.1:8080 --rounds 3
"""
import argparse
import http.client
import json
import statistics
import sys
import time
import urllib.parse


def chat(u, messages, gen, timeout, key):
    body = {"model": "m", "messages": messages, "max_tokens": gen, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    h = {"Content-Type": "application/json"}
    if key:
        h["Authorization"] = "Bearer " + key
    c = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", body=json.dumps(body), headers=h)
    r = c.getresponse()
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
            if j.get("usage"):
                usage = j["usage"]
            if j.get("choices") and j["choices"][0]["delta"].get("content"):
                if ttft is None:
                    ttft = time.perf_counter() - t0
                text += j["choices"][0]["delta"]["content"]
    c.close()
    return ttft, text, usage


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--system-words", type=int, default=300)
    ap.add_argument("--gen", type=int, default=16)
    ap.add_argument("--api-key")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--out")
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    rows = []
    for k in range(a.rounds):
        system = f"Conversation {k} at {time.time():.0f}. " + " ".join(f"Fact {i}: item {i * 31 % 97} is blue."
                                                                       for i in range(a.system_words // 6))
        m1 = [{"role": "system", "content": system}, {"role": "user", "content": "What colour is item 5?"}]
        t1, ans, u1 = chat(u, m1, a.gen, a.timeout, a.api_key)
        m2 = m1 + [{"role": "assistant", "content": ans}, {"role": "user", "content": "And item 7?"}]
        t2, _, u2 = chat(u, m2, a.gen, a.timeout, a.api_key)
        rows.append({"turn1_prompt": u1["prompt_tokens"], "turn1_cached": u1["prompt_tokens_details"]["cached_tokens"],
                     "turn1_ttft_ms": round(t1 * 1e3, 1), "turn2_prompt": u2["prompt_tokens"],
                     "turn2_cached": u2["prompt_tokens_details"]["cached_tokens"], "turn2_ttft_ms": round(t2 * 1e3, 1)})
        print(rows[-1], flush=True)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"median of {a.rounds}: turn 1 TTFT {med['turn1_ttft_ms']} ms ({med['turn1_prompt']} prompt tokens), "
          f"turn 2 TTFT {med['turn2_ttft_ms']} ms ({med['turn2_cached']} of {med['turn2_prompt']} cached)")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"tool": "bench/serve_prefix.py", "url": a.url, "rounds": rows, "median": med, "note": a.note,
                       "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
