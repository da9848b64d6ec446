"""test_server: `tern serve` on the default model (CPU) through the official openai SDK and raw HTTP.

Run by tests/t_server.sh (the .venv that scripts/deps.sh test makes). Ends "t_server: N passed, N failed".
Every request is to 127.0.0.1; every loop is bounded in count and time.

- the SDK: /v1/models, chat and text completions, streaming with stream_options.include_usage (exactly one chunk with
  no choices and the usage), logprobs / top_logprobs, stop strings (never emitted, streamed or not), finish_reason;
- greedy output of a request equals `tern run`'s for the same prompt (chat: the template's text from
  /apply-template), alone and while 16 other streams run;
- 64 concurrent greedy streams of 8 prompts and 8 lengths (a --parallel 64 server): every response complete and equal
  to `tern run`'s for its prompt alone; afterwards no request running or waiting and every KV block back (/metrics);
  the same with 24 of them dropped at random moments (mid-prefill and mid-decode, streams and not): all cancelled,
  nothing stuck; RSS after the run within 5% of after the warm-up (load_check);
- prefix cache: A (long shared prefix), B, then A' (A's prefix, a new question): A' cached_tokens covers the prefix
  (whole blocks), and its time to first token is printed beside A's;
- the prefix cache's LRU eviction on a 16-block pool: A, B, A' (touches A), then C must evict: B's blocks go (its tail
  first), A's survive, read from cached_tokens and /metrics (small_pool_check);
- a client that disconnects mid-decode or mid-prefill: its sequence leaves within one step (tern_steps_total), its
  blocks back;
- errors, each a 4xx with an OpenAI error object naming the problem: malformed JSON, invalid UTF-8, nesting past the
  limit, a body past --max-body (413), unknown and unimplemented fields (tools, n > 1, response_format with a
  schema), out-of-range values, prompt + max_tokens past the context (the numbers in the message), a missing or
  wrong API key (401), an unknown route (404), a wrong method (405), a full queue (503 with Retry-After);
- /tokenize and /detokenize round trip; /health: 503 while the model loads (polled from the process's start), then 200;
- SIGTERM and SIGINT with a stream running: new connections refused, the process exits within 5 s.
"""
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import openai

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TERN = os.environ.get("TERN_BIN", os.path.join(ROOT, "tern"))  # TERN_BIN: another build (e.g. under ASan)
MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
G3 = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")  # sliding-window layers (swa_check), when present
KEY = "test-key-123"

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL t_server: {what}", flush=True)
    return cond


class Server:
    """A `tern serve` on a free port; its stderr kept in a file."""

    def __init__(self, *args, model=MODEL):
        self.log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"t_server_{os.getpid()}_{id(self)}.log"), "w+")
        self.p = subprocess.Popen([TERN, "serve", "-m", model, "--port", "0", *args], stderr=self.log,
                                  stdout=subprocess.DEVNULL, cwd=ROOT)
        self.port = None
        t0 = time.time()
        while time.time() - t0 < 30 and self.port is None:
            self.log.seek(0)
            m = re.search(r"listening on http://[^:]+:(\d+)", self.log.read())
            if m:
                self.port = int(m.group(1))
            elif self.p.poll() is not None:
                break
            else:
                time.sleep(0.05)
        if self.port is None:
            self.log.seek(0)
            raise RuntimeError("tern serve did not start: " + self.log.read()[-2000:])
        self.url = f"http://127.0.0.1:{self.port}"

    def client(self, key=KEY, **kw):
        return openai.OpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0, timeout=120, **kw)

    def request(self, method, path, body=None, headers=None, raw=None, timeout=60):
        """(status, headers dict, body bytes)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
        h.update(headers or {})
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        c.close()
        return out

    def metrics(self):
        st, _, body = self.request("GET", "/metrics")
        m = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                m[k] = float(v)
        return m

    def rss_kb(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.seek(0)
        log = self.log.read()
        if not check(self.p.returncode == 0 and "ERROR: " not in log and "runtime error" not in log,
                     f"tern serve exits cleanly (status {self.p.returncode})"):
            print(log[-4000:], flush=True)
        self.log.close()
        os.unlink(self.log.name)


def tern_run(prompt, n, sampling=("--temp", "0"), model=MODEL):
    """`tern run`'s continuation of prompt, greedy unless sampling says otherwise (its stdout less the echoed prompt and
    the final newline)."""
    out = subprocess.run([TERN, "run", "-m", model, "-p", prompt, "-n", str(n), "-t", "2", *sampling],
                         capture_output=True, cwd=ROOT, timeout=120).stdout.decode()
    assert out.startswith(prompt), out[:200]
    return out[len(prompt):-1] if out.endswith("\n") else out[len(prompt):]


def wait_idle(srv, timeout=20):
    """Until no request runs or waits and no sequence holds a KV block; the metrics then."""
    t0 = time.time()
    while True:
        m = srv.metrics()
        if (m["tern_requests_running"] == 0 and m["tern_requests_waiting"] == 0 and m["tern_kv_blocks_sequences"] == 0) \
                or time.time() - t0 > timeout:
            return m
        time.sleep(0.1)


def stream_chat(cl, messages, out, i, **kw):
    """Stream a chat completion; out[i] = (text, finish_reason, usage, n_usage_chunks, first_chunk_role, ttft)."""
    try:
        t0 = time.time()
        ttft = None
        text, finish, usage, n_usage, role = "", None, None, 0, None
        for ch in cl.chat.completions.create(model="m", messages=messages, stream=True,
                                             stream_options={"include_usage": True}, **kw):
            if ch.usage is not None:
                n_usage += 1
                usage = ch.usage
                check(ch.choices == [], "the usage chunk has no choices")
                continue
            d = ch.choices[0].delta
            if role is None:
                role = d.role
            if d.content:
                if ttft is None:
                    ttft = time.time() - t0
                text += d.content
            if ch.choices[0].finish_reason:
                finish = ch.choices[0].finish_reason
        out[i] = (text, finish, usage, n_usage, role, ttft)
    except Exception as e:  # recorded, checked by the caller
        out[i] = e


def main():
    srv = Server("--api-key", KEY, "--parallel", "16", "-c", "1024", "--max-body", "65536", "-t", "2")
    try:
        run_all(srv)
    finally:
        srv.stop()
    health_check()
    load_check()
    signal_check()
    queue_check()
    small_pool_check()
    swa_check()
    timeout_check()
    print(f"t_server: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


def run_all(srv):
    cl = srv.client()
    st, _, body = srv.request("GET", "/health")
    check(st == 200 and json.loads(body)["status"] == "ok", f"/health: {st} {body[:100]}")
    models = cl.models.list()
    check(len(models.data) == 1 and models.data[0].id == "SmolLM2-135M-Instruct.Q4_1", f"/v1/models: {models}")

    # ---- greedy = tern run ----
    prompt = "Once upon a time"
    want = tern_run(prompt, 24)
    r = cl.completions.create(model="m", prompt=prompt, max_tokens=24, temperature=0)
    check(r.choices[0].text == want, f"completion greedy = tern run: {r.choices[0].text!r} vs {want!r}")
    check(r.usage.completion_tokens == 24 and r.choices[0].finish_reason == "length", f"usage/finish: {r.usage} {r.choices[0].finish_reason}")
    msgs = [{"role": "user", "content": "Write one sentence about the sea."}]
    st, _, body = srv.request("POST", "/apply-template", {"messages": msgs})
    chat_prompt = json.loads(body)["prompt"]
    check(chat_prompt.startswith("<|im_start|>system\n") and chat_prompt.endswith("<|im_start|>assistant\n"), f"template: {chat_prompt!r}")
    want_chat = tern_run(chat_prompt, 32)
    r = cl.chat.completions.create(model="m", messages=msgs, max_tokens=32, temperature=0)
    got_chat = r.choices[0].message.content
    check(got_chat == want_chat.split("<|im_end|>")[0] if "<|im_end|>" in want_chat else got_chat == want_chat,
          f"chat greedy = tern run: {got_chat!r} vs {want_chat!r}")
    check(r.choices[0].message.role == "assistant" and r.object == "chat.completion", "chat response shape")
    n_prompt_chat = r.usage.prompt_tokens

    # ---- streaming with usage ----
    out = [None]
    stream_chat(cl, msgs, out, 0, max_tokens=32, temperature=0)
    text, finish, usage, n_usage, role, _ = out[0]
    check(text == got_chat, f"streamed text = non-streamed: {text!r} vs {got_chat!r}")
    check(n_usage == 1 and usage.completion_tokens == r.usage.completion_tokens and usage.prompt_tokens == n_prompt_chat,
          f"one usage chunk: {n_usage} {usage}")
    check(role == "assistant" and finish in ("stop", "length"), f"role {role} finish {finish}")
    # a completion stream
    chunks = list(cl.completions.create(model="m", prompt=prompt, max_tokens=24, temperature=0, stream=True))
    check("".join(c.choices[0].text for c in chunks if c.choices) == want, "completion stream = tern run")
    check(chunks[-1].choices[0].finish_reason == "length", "completion stream ends with its finish_reason")

    # ---- logprobs ----
    r = cl.chat.completions.create(model="m", messages=msgs, max_tokens=8, temperature=0, logprobs=True, top_logprobs=3)
    lp = r.choices[0].logprobs.content
    check(len(lp) == r.usage.completion_tokens or (len(lp) == r.usage.completion_tokens - 1 and r.choices[0].finish_reason == "stop"),
          f"one logprob per token: {len(lp)} vs {r.usage.completion_tokens}")
    ok = all(len(t.top_logprobs) == 3 and t.logprob <= 0 and t.top_logprobs[0].token == t.token
             and abs(t.top_logprobs[0].logprob - t.logprob) < 1e-6
             and t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob >= t.top_logprobs[2].logprob for t in lp)
    check(ok, f"greedy logprobs: the chosen token tops its alternatives: {lp[:2]}")
    check("".join(t.token for t in lp) == r.choices[0].message.content, "logprob tokens spell the text")
    # the values against `tern run --logprobs 3` (4 decimals) for the same prompt: text, bytes, log-probabilities
    ref_chat = tern_run_pieces(chat_prompt, 8, 3)
    bad = [(k, t, ref_chat[k]) for k, t in enumerate(lp)
           if k >= len(ref_chat) or t.token.encode() != ref_chat[k][0] or bytes(t.bytes) != ref_chat[k][0]
           or abs(t.logprob - ref_chat[k][2]) > 2e-4 or len(t.top_logprobs) != len(ref_chat[k][3])
           or not all(a.token.encode() == b and abs(a.logprob - x) <= 2e-4 for a, (b, x) in zip(t.top_logprobs, ref_chat[k][3]))]
    check(len(lp) >= 4 and not bad, f"chat logprobs = tern run --logprobs 3's: {bad[:2]}")
    r = cl.completions.create(model="m", prompt=prompt, max_tokens=6, temperature=0, logprobs=2)
    l = r.choices[0].logprobs
    check(len(l.tokens) == 6 and len(l.token_logprobs) == 6 and all(len(t) == 2 for t in l.top_logprobs)
          and l.text_offset[0] == 0, f"completion logprobs: {l}")
    ref = tern_run_pieces(prompt, 6, 2)
    check(len(ref) == 6 and [t.encode() for t in l.tokens] == [x[0] for x in ref]
          and all(abs(a - x[2]) <= 2e-4 for a, x in zip(l.token_logprobs, ref))
          and all(len(d) == 2 and all(abs(d[b.decode()] - y) <= 2e-4 for b, y in x[3]) for d, x in zip(l.top_logprobs, ref))
          and l.text_offset == [sum(len(y[0].decode()) for y in ref[:k]) for k in range(6)],
          f"completion logprobs = tern run --logprobs 2's: {l} vs {ref}")

    # ---- max_completion_tokens (chat's newer name for max_tokens) ----
    st, _, b = srv.request("POST", "/tokenize", {"content": "<|im_end|><|endoftext|>"})
    eog = set(json.loads(b)["tokens"])
    r = cl.chat.completions.create(model="m", messages=msgs, max_completion_tokens=5, temperature=0)
    check((r.choices[0].message.content, r.choices[0].finish_reason, r.usage.completion_tokens)
          == expected(ref_chat, 5, eog), f"max_completion_tokens 5: {r}")

    # ---- the SSE framing, raw: "data: {json}" events, the usage chunk last, then "data: [DONE]" ----
    st, h, b = srv.request("POST", "/v1/chat/completions", {"model": "m", "messages": msgs, "max_tokens": 6, "temperature": 0,
                                                            "stream": True, "stream_options": {"include_usage": True}})
    events = b.decode().split("\n\n")
    datas = [json.loads(e[6:]) for e in events[:-2] if e.startswith("data: {")]
    check(st == 200 and h.get("content-type", "").startswith("text/event-stream") and events[-1] == ""
          and events[-2] == "data: [DONE]" and len(datas) == len(events) - 2,
          f"SSE: every event 'data: ...', the last 'data: [DONE]': {st} {h.get('content-type')} {b[-200:]!r}")
    check(len(datas) >= 3 and datas[0]["choices"][0]["delta"].get("role") == "assistant"
          and all(d["object"] == "chat.completion.chunk" and d["usage"] is None and len(d["choices"]) == 1 for d in datas[:-1])
          and datas[-1]["choices"] == [] and datas[-1]["usage"]["completion_tokens"] == 6
          and datas[-2]["choices"][0]["finish_reason"] == "length"
          and "".join(d["choices"][0]["delta"].get("content") or "" for d in datas[:-1]) == expected(ref_chat, 6, eog)[0],
          f"SSE chunks: role first, one choice each with usage null, the finish_reason, then one usage chunk: {datas[:2]} {datas[-2:]}")

    # ---- stop strings ----
    cut = want.index("Nova") if "Nova" in want else len(want) // 2
    stop = want[cut:cut + 3]
    r = cl.completions.create(model="m", prompt=prompt, max_tokens=24, temperature=0, stop=[stop, "zzzz"])
    check(r.choices[0].text == want[:want.index(stop)] and r.choices[0].finish_reason == "stop",
          f"stop {stop!r}: {r.choices[0].text!r}, {r.choices[0].finish_reason}")
    s = "".join(c.choices[0].text for c in cl.completions.create(model="m", prompt=prompt, max_tokens=24, temperature=0,
                                                                  stop=stop, stream=True) if c.choices)
    check(s == want[:want.index(stop)], f"streamed stop never emitted: {s!r}")

    # ---- sampling parameters ----
    kw = dict(model="m", messages=msgs, max_tokens=12, temperature=0.9, top_p=0.9, seed=7)
    a = cl.chat.completions.create(**kw, extra_body={"top_k": 20, "min_p": 0.02, "repetition_penalty": 1.1})
    b = cl.chat.completions.create(**kw, extra_body={"top_k": 20, "min_p": 0.02, "repetition_penalty": 1.1})
    check(a.choices[0].message.content == b.choices[0].message.content, "the same seed, the same text")
    # seed -1: a fresh draw each request (tern run --seed -1, llama.cpp's server), not the fixed seed -1
    hot = dict(model="m", messages=msgs, max_tokens=24, temperature=1.5, seed=-1)
    outs = {cl.chat.completions.create(**hot).choices[0].message.content for _ in range(3)}
    check(len(outs) >= 2, f"seed -1: three requests at temperature 1.5 gave one text: {outs}")
    # the sampler against tern run's: a request's seed and parameters give the text tern run gives with them
    for temp, top_p, top_k, min_p, rep, seed in ((0.9, 0.9, 20, 0.02, 1.1, 7), (1.3, 1.0, 0, 0.1, 1.0, 123)):
        args = ["--temp", str(temp), "--top-p", str(top_p), "--top-k", str(top_k), "--min-p", str(min_p),
                "--repeat-penalty", str(rep), "--seed", str(seed)]
        want_s = tern_run(chat_prompt, 24, args).split("<|im_end|>")[0]
        kw = dict(max_tokens=24, temperature=temp, top_p=top_p, seed=seed,
                  extra_body={"top_k": top_k, "min_p": min_p, "repetition_penalty": rep})
        a = cl.chat.completions.create(model="m", messages=msgs, **kw)
        o = [None]
        stream_chat(cl, msgs, o, 0, **kw)
        other = cl.chat.completions.create(model="m", messages=msgs, **{**kw, "seed": seed + 1})
        check(a.choices[0].message.content == want_s and o[0][0] == want_s and other.choices[0].message.content != want_s,
              f"sampled with {' '.join(args)}: = tern run's, streamed too, another seed differs: "
              f"{a.choices[0].message.content!r} / {o[0][0]!r} vs {want_s!r}")
    p = cl.chat.completions.create(model="m", messages=msgs, max_tokens=24, temperature=0, presence_penalty=2.0,
                                   frequency_penalty=2.0)
    check(p.choices[0].message.content != got_chat[:len(p.choices[0].message.content)] or len(p.choices[0].message.content) < 4,
          "presence/frequency penalties change a greedy answer")

    # ---- errors: each a 4xx with an OpenAI error ----
    def expect(status, what, body=None, raw=None, headers=None, path="/v1/chat/completions", method="POST", want=None):
        st, h, b = srv.request(method, path, body=body, raw=raw, headers=headers)
        try:
            e = json.loads(b)["error"]
            shape = isinstance(e["message"], str) and e["message"] and "type" in e
        except Exception:
            e, shape = {}, False
        good = st == status and shape and (want is None or want in e.get("message", "") or want == e.get("param"))
        check(good, f"{what}: {st} {b[:200]!r}")
        return h

    base = {"model": "m", "messages": msgs}
    expect(400, "malformed JSON", raw=b'{"model": "m", "messages": [')
    expect(400, "invalid UTF-8", raw=b'{"model": "m", "messages": [{"role": "user", "content": "\xff\xfe"}]}')
    expect(400, "nesting past the limit", raw=b'{"model": "m", "x": ' + b"[" * 100 + b"]" * 100 + b"}")
    expect(413, "body past --max-body", raw=b'{"model": "m", "pad": "' + b"x" * 70000 + b'"}')
    expect(400, "tools", body={**base, "tools": [{"type": "function", "function": {"name": "f"}}]}, want="tools")
    expect(400, "n > 1", body={**base, "n": 2}, want="n")
    expect(400, "response_format schema", body={**base, "response_format": {"type": "json_schema", "json_schema": {}}},
           want="response_format")
    expect(400, "unknown field", body={**base, "frobnicate": 1}, want="frobnicate")
    expect(400, "temperature out of range", body={**base, "temperature": 3}, want="temperature")
    expect(400, "max_tokens not an integer", body={**base, "max_tokens": 1.5}, want="max_tokens")
    expect(400, "missing messages", body={"model": "m"}, want="messages")
    expect(400, "bad role", body={"model": "m", "messages": [{"role": "wizard", "content": "x"}]})
    expect(400, "image content", body={"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})
    expect(400, "context overflow", body={**base, "max_tokens": 5000},
           want=f"maximum context length is 1024 tokens. However, you requested {n_prompt_chat + 5000} tokens "
                f"({n_prompt_chat} in the messages, 5000 in the completion)")
    expect(400, "a prompt that fills the context", body={"model": "m", "prompt": "word " * 1100}, path="/v1/completions",
           want="maximum context length is 1024 tokens. However, your prompt resulted in")
    expect(400, "five stop strings", body={**base, "stop": ["a", "b", "c", "d", "e"]}, want="stop")
    expect(400, "completion prompt batch", body={"model": "m", "prompt": ["a", "b"]}, path="/v1/completions", want="prompt")
    expect(400, "token id out of range", body={"model": "m", "prompt": [1, 99999999]}, path="/v1/completions", want="prompt")
    expect(400, "not an object", raw=b"[1, 2]")
    # cJSON's strings end at a NUL and its parse stops after one value: both checked before the fields are read
    expect(400, "text after the JSON value", raw=json.dumps(base).encode() + b" trailing {", want="more after its JSON value")
    expect(400, "trailing text on /apply-template", raw=json.dumps(base).encode() + b" x", path="/apply-template",
           want="more after its JSON value")
    expect(400, "U+0000 in content", raw=b'{"model": "m", "messages": [{"role": "user", "content": "abc\\u0000def"}]}',
           want="U+0000")
    expect(400, "U+0000 in a role", raw=b'{"model": "m", "messages": [{"role": "user\\u0000x", "content": "a"}]}',
           want="U+0000")
    expect(400, "U+0000 in a key", raw=b'{"model": "m", "max_tokens\\u0000x": 3, "messages": []}', want="U+0000")
    expect(400, "U+0000 on /tokenize", raw=b'{"content": "a\\u0000b"}', path="/tokenize", want="U+0000")
    st, _, b = srv.request("POST", "/tokenize", raw=b'{"content": "a\\\\u0000b"}')  # the text a\u0000b: no NUL
    check(st == 200 and len(json.loads(b)["tokens"]) > 3, f"an escaped backslash before u0000 is text: {st} {b[:200]!r}")
    st, _, b = srv.request("POST", "/tokenize", raw=b'{"content": "ab"} \n\t')
    check(st == 200, f"white space after the JSON value: {st} {b[:200]!r}")
    expect(400, "empty body", raw=b"")
    # each field tern does not implement: a 400 whose param and message name it (never silently ignored)
    comp = {"model": "m", "prompt": "Hi"}
    for path, body, param in [
            ("/v1/chat/completions", {**base, "functions": [{"name": "f", "parameters": {}}]}, "functions"),
            ("/v1/chat/completions", {**base, "tool_choice": "auto"}, "tool_choice"),
            ("/v1/chat/completions", {**base, "function_call": "auto"}, "function_call"),
            ("/v1/chat/completions", {**base, "logit_bias": {"198": -100}}, "logit_bias"),
            ("/v1/chat/completions", {**base, "store": True}, "store"),
            ("/v1/chat/completions", {**base, "response_format": {"type": "json_object"}}, "response_format"),
            ("/v1/chat/completions", {**base, "stream": True, "stream_options": {"include_obfuscation": True}}, "stream_options"),
            ("/v1/chat/completions", {**base, "modalities": ["audio"]}, "modalities"),
            ("/v1/chat/completions", {**base, "max_tokens": 4, "stream_options": {"include_usage": True}}, "stream_options"),
            ("/v1/chat/completions", {**base, "logprobs": False, "top_logprobs": 2}, "top_logprobs"),
            ("/v1/chat/completions", {"model": "m", "messages": [{"role": "tool", "content": "1"}]}, "messages[0].role"),
            ("/v1/chat/completions", {"model": "m", "messages": [
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]},
             "messages[0].tool_calls"),
            ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": [
                {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}]}]}, "messages[0].content[0]"),
            ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x", "audio": {}}]},
             "messages[0].audio"),
            ("/v1/completions", {**comp, "echo": True}, "echo"),
            ("/v1/completions", {**comp, "suffix": "end"}, "suffix"),
            ("/v1/completions", {**comp, "best_of": 2}, "best_of"),
            ("/v1/completions", {**comp, "max_completion_tokens": 4}, "max_completion_tokens"),
            ("/v1/completions", {**comp, "logprobs": 6}, "logprobs")]:
        st, _, b = srv.request("POST", path, body)
        try:
            e = json.loads(b)["error"]
        except Exception:
            e = {}
        name = param.split(".")[-1].split("[")[0]
        check(st == 400 and e.get("param") == param and name in e.get("message", "") and e.get("type"),
              f"unsupported {param} on {path}: a 400 naming it: {st} {b[:200]!r}")
    # their neutral values are accepted: the answer is the plain request's
    r = cl.chat.completions.create(model="m", messages=msgs, max_tokens=5, temperature=0, tools=[], tool_choice="none",
                                   logit_bias={}, store=False, response_format={"type": "text"}, n=1,
                                   parallel_tool_calls=False, user="u", metadata={"k": "v"})
    check(r.choices[0].message.content == expected(ref_chat, 5, eog)[0], f"neutral values of the unsupported fields: {r}")
    expect(401, "wrong API key", body=base, headers={"Authorization": "Bearer nope"})
    expect(401, "no API key", body=base, headers={"Authorization": ""})
    st, _, b = srv.request("POST", "/tokenize", {"content": "a"}, headers={"Authorization": f"bearer {KEY}"})
    check(st == 200, f"the auth scheme is case-insensitive (bearer): {st} {b[:200]!r}")
    expect(404, "unknown route", body=base, path="/v1/embeddings")
    expect(405, "GET a POST route", path="/v1/chat/completions", method="GET")
    try:
        srv.client(key="wrong").chat.completions.create(model="m", messages=msgs, max_tokens=2)
        check(False, "the SDK with a wrong key")
    except openai.AuthenticationError as e:
        check(e.status_code == 401, "the SDK: AuthenticationError")
    try:
        cl.chat.completions.create(model="m", messages=msgs, max_tokens=2, n=3)
        check(False, "the SDK with n=3")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and "n" in str(e), f"the SDK: BadRequestError naming n: {e}")

    # ---- tokenize / detokenize ----
    st, _, b = srv.request("POST", "/tokenize", {"content": "Hello world", "with_pieces": True})
    toks = json.loads(b)["tokens"]
    check(st == 200 and "".join(t["piece"] for t in toks) == "Hello world", f"/tokenize: {b[:200]!r}")
    st, _, b = srv.request("POST", "/detokenize", {"tokens": [t["id"] for t in toks]})
    check(st == 200 and json.loads(b)["content"] == "Hello world", f"/detokenize: {b[:200]!r}")
    text = "Hello world, \u00fcn\u00efcode <|im_start|> 12345"
    st, _, b = srv.request("POST", "/tokenize", {"content": text})
    cli = subprocess.run([TERN, "tokenize", "-m", MODEL, "-p", text, "--ids"], capture_output=True, cwd=ROOT, timeout=60)
    check(st == 200 and json.loads(b)["tokens"] == json.loads(cli.stdout), f"/tokenize = tern tokenize --ids: {b[:200]!r} "
                                                                            f"vs {cli.stdout[:200]!r}")
    st, _, b = srv.request("POST", "/detokenize", {"tokens": json.loads(cli.stdout)})
    check(st == 200 and json.loads(b)["content"] == text, f"/detokenize of tern tokenize's ids: {b[:200]!r}")

    # ---- /metrics: Prometheus text with the series; the counters move by a request's usage ----
    m0 = wait_idle(srv)
    r = cl.completions.create(model="m", prompt="The metrics of a request: " + prompt, max_tokens=7, temperature=0)
    m1 = wait_idle(srv)
    st, h, b = srv.request("GET", "/metrics")
    types = dict(re.findall(r"^# TYPE (\S+) (counter|gauge)$", b.decode(), re.M))
    names = {"tern_prompt_tokens_total": "counter", "tern_generation_tokens_total": "counter",
             "tern_prefix_cache_hit_tokens_total": "counter", "tern_prompt_tokens_per_second": "gauge",
             "tern_generation_tokens_per_second": "gauge", "tern_requests_running": "gauge",
             "tern_requests_waiting": "gauge", "tern_kv_blocks_used": "gauge", "tern_kv_blocks_total": "gauge"}
    check(st == 200 and h.get("content-type", "").startswith("text/plain") and all(types.get(k) == v for k, v in names.items())
          and all(k in m1 for k in names), f"/metrics: the series and their types: {types}")
    d = lambda k: m1[k] - m0[k]
    check(d("tern_prompt_tokens_total") + d("tern_prefix_cache_hit_tokens_total") == r.usage.prompt_tokens
          and d("tern_generation_tokens_total") == r.usage.completion_tokens == 7
          and d('tern_requests_total{outcome="finished"}') == 1
          and m1["tern_prompt_tokens_per_second"] > 0 and m1["tern_generation_tokens_per_second"] > 0
          and 0 < m1["tern_kv_blocks_used"] <= m1["tern_kv_blocks_total"] == 16 * 1024 / m1["tern_kv_block_size"],
          f"/metrics after one request ({r.usage}): {[(k, m0.get(k), m1[k]) for k in sorted(m1) if m0.get(k) != m1[k]]}")

    # greedy = tern run while 16 other streams run (sampled, of other prompts)
    others = [None] * 16
    ths = [threading.Thread(target=stream_chat, args=(cl, [{"role": "user", "content": f"Story {i}:"}], others, i),
                            kwargs={"max_tokens": 48, "temperature": 0.8, "seed": i}) for i in range(16)]
    for t in ths:
        t.start()
    time.sleep(0.5)
    r = cl.completions.create(model="m", prompt=prompt, max_tokens=24, temperature=0)
    check(r.choices[0].text == want, f"greedy = tern run beside 16 streams: {r.choices[0].text!r}")
    for t in ths:
        t.join(300)
    check(all(isinstance(o, tuple) and o[1] for o in others), "the 16 sampled streams completed")

    # ---- a long prompt does not stall a running stream: its prefill runs in chunks (--batch-tokens, 128 on the CPU)
    # between the stream's tokens, so the stream keeps getting tokens until the long request's first one ----
    wait_idle(srv)
    long_prompt = "Summarise this list: " + " ".join(f"item{i} is {i % 7} red" for i in range(110))
    st, _, b = srv.request("POST", "/tokenize", {"content": long_prompt})
    n_long = len(json.loads(b)["tokens"])
    arrivals = []

    def runner():
        for ch in cl.chat.completions.create(model="m", messages=[{"role": "user", "content": "Count to fifty."}],
                                             max_tokens=40, temperature=0, stream=True, extra_body={"ignore_eos": True}):
            if ch.choices and ch.choices[0].delta.content:
                arrivals.append(time.time())

    th = threading.Thread(target=runner)
    th.start()
    t0 = time.time()
    while len(arrivals) < 3 and time.time() - t0 < 60 and th.is_alive():
        time.sleep(0.01)
    t_send, first = time.time(), None
    for ch in cl.completions.create(model="m", prompt=long_prompt, max_tokens=2, temperature=0, stream=True):
        if first is None and ch.choices and ch.choices[0].text:
            first = time.time()
    th.join(120)
    first = first or time.time()
    during = [t for t in arrivals if t_send < t < first]
    gaps = [b - a for a, b in zip([t_send] + during, during + [first])]
    check(600 <= n_long < 1000 and len(during) >= 3,
          f"a running stream gets tokens while a {n_long}-token prompt prefills: {len(during)} in {first - t_send:.2f} s")
    print(f"t_server: a {n_long}-token prompt's prefill took {first - t_send:.2f} s; the running stream got {len(during)} "
          f"tokens meanwhile, the longest gap {max(gaps) * 1e3:.0f} ms", flush=True)

    # ---- prefix cache: A, B, A' ----
    system = "You are a careful assistant. " + " ".join(f"Rule {i}: answer briefly and politely." for i in range(40))
    A = [{"role": "system", "content": system}, {"role": "user", "content": "What is the sea?"}]
    B = [{"role": "user", "content": "What is a mountain?"}]
    A2 = [{"role": "system", "content": system}, {"role": "user", "content": "What is a river?"}]
    res = {}
    for name, msg in (("A", A), ("B", B), ("A'", A2)):
        o = [None]
        stream_chat(cl, msg, o, 0, max_tokens=4, temperature=0)
        res[name] = o[0]
    pa, pa2 = res["A"][2], res["A'"][2]
    st, _, b = srv.request("POST", "/tokenize", {"content": system})
    n_sys = len(json.loads(b)["tokens"])
    cached = pa2.prompt_tokens_details.cached_tokens
    check(pa.prompt_tokens_details.cached_tokens == 0 or pa.prompt_tokens_details.cached_tokens < n_sys // 2,
          f"A: cached {pa.prompt_tokens_details.cached_tokens}")
    check(cached >= (n_sys // 16) * 16 and cached % 16 == 0 and cached < pa2.prompt_tokens,
          f"A' cached_tokens {cached} covers the {n_sys}-token prefix in whole blocks (prompt {pa2.prompt_tokens})")
    print(f"t_server: prefix cache: A' {cached} of {pa2.prompt_tokens} prompt tokens cached; time to first token "
          f"A {res['A'][5] * 1e3:.0f} ms, A' {res['A' + chr(39)][5] * 1e3:.0f} ms", flush=True)
    check(res["A'"][5] < res["A"][5] / 2, f"A' time to first token {res['A' + chr(39)][5]:.3f} s under half of A's "
                                          f"{res['A'][5]:.3f} s")
    m = wait_idle(srv)
    check(m["tern_prefix_cache_hit_tokens_total"] >= cached, "hit tokens in /metrics")


def unquote(line, i):
    """The bytes of the quoted text at line[i] as `tern run --logprobs` prints it (\\n, \\t, \\", \\\\, and \\xNN for
    bytes that are not whole UTF-8 characters), and the index after its closing quote."""
    assert line[i] == '"', line
    b, i = bytearray(), i + 1
    while line[i] != '"':
        if line[i] == "\\":
            c = line[i + 1]
            if c == "x":
                b.append(int(line[i + 2:i + 4], 16))
                i += 4
                continue
            b += {"n": b"\n", "t": b"\t"}.get(c, c.encode())
            i += 2
        else:
            b += line[i].encode()
            i += 1
    return bytes(b), i + 1


def tern_run_pieces(prompt, n, top=1):
    """`tern run --logprobs top`'s greedy tokens of prompt: [(bytes of the token's text, id, logprob, [(bytes,
    logprob)] of the top most likely)], n of them or fewer ending with the end-of-generation token that stopped it."""
    out = subprocess.run([TERN, "run", "-m", MODEL, "-p", prompt, "-n", str(n), "--temp", "0", "-t", "2", "--logprobs",
                          str(top)], capture_output=True, cwd=ROOT, timeout=120).stdout.decode()
    toks = []
    for line in out.splitlines():
        piece, i = unquote(line, 0)
        m = re.match(r"\tid (\d+)\tlogprob (\S+)\ttop:", line[i:])
        i += m.end()
        alts = []
        while i < len(line):
            alt, i = unquote(line, i + 1)
            k = line.find(" ", i + 1)
            k = len(line) if k < 0 else k
            alts.append((alt, float(line[i + 1:k])))
            i = k
        toks.append((piece, int(m.group(1)), float(m.group(2)), alts))
    return toks


def expected(pieces, max_tokens, eog):
    """(text, finish_reason, completion_tokens) a greedy request of max_tokens gives, from the tokens alone."""
    e = next((k for k, t in enumerate(pieces) if t[1] in eog), None)
    if e is not None and e < max_tokens:
        return b"".join(t[0] for t in pieces[:e]).decode(errors="replace"), "stop", e + 1
    return b"".join(t[0] for t in pieces[:max_tokens]).decode(errors="replace"), "length", max_tokens


def load_check():
    """64 concurrent streams of mixed lengths (8 prompts of 32 to 156 tokens x 8 max_tokens from 1 to 30, each pair
    once) on a server of --parallel 64: every response complete with one usage chunk, its text, finish_reason and token
    counts equal to what `tern run` gives for that prompt alone (so none garbled, none lost), the server's outcome and
    token counters agree; afterwards no request running or waiting and every KV block back (none held by a sequence,
    the cached ones idle). Then the same with 24 of the 64 dropped at seeded random moments (after k streamed tokens,
    or after t seconds, streaming or not: before their first token and after it): all 24 cancelled, the other 40
    equal to tern run's, nothing stuck. The warm-up (those two rounds, then 64 streams of one prompt decoding in the
    same steps, which takes the per-step buffers to their largest) is followed by the run (the two rounds again): RSS
    after the run within 5% of after the warm-up. All greedy, so the prefix cache holds the same blocks every round
    (the KV pool's pages are first touched as higher block numbers are used: a growing cache would move RSS without a
    leak). A dropped request asks for 800 tokens with ignore_eos, more than any drop leaves time for. About 65 s on
    the 2-core dev box, 13 of them tern run's references."""
    rng = random.Random(27)
    ctx_words = " ".join(f"The {w} river runs past the {v} mill." for w, v in zip(
        ["old", "slow", "cold", "wide", "deep", "quiet", "green", "dark", "long", "bright", "small", "still"],
        ["stone", "wooden", "red", "empty", "busy", "broken", "new", "white", "tall", "grey", "north", "south"]))
    prompts = ["Hi!", "What is 2 + 2?", "Name three colours.", "Tell me about cats.",
               "Describe a rainy day in a small town in three sentences.",
               "Translate to French: The weather is nice today and I would like to go for a walk in the park.",
               "Summarise: " + " ".join(f"word{i}" for i in range(40)),
               "Read this and answer the question at the end. " + ctx_words + " Question: what runs past the mills?"]
    lens = [1, 2, 4, 7, 11, 16, 22, 30]
    srv = Server("--api-key", KEY, "--parallel", "64", "-c", "1024", "-t", "2")
    try:
        cl = srv.client()
        t0 = time.time()
        ref, n_prompt = [], []
        for p in prompts:
            st, _, b = srv.request("POST", "/apply-template", {"messages": [{"role": "user", "content": p}]})
            text = json.loads(b)["prompt"]
            ref.append(tern_run_pieces(text, max(lens)))
            st, _, b = srv.request("POST", "/tokenize", {"content": text, "add_special": True})
            n_prompt.append(len(json.loads(b)["tokens"]))
        st, _, b = srv.request("POST", "/tokenize", {"content": "<|im_end|><|endoftext|>"})
        eog = {t for t in json.loads(b)["tokens"]}
        print(f"t_server: load: references from tern run in {time.time() - t0:.1f} s; prompts of "
              f"{min(n_prompt)}-{max(n_prompt)} tokens", flush=True)
        # stream i: prompt i % 8, max_tokens lens[(i // 8 + i) % 8]: each (prompt, length) pair once
        jobs = [(i % 8, lens[(i // 8 + i) % 8]) for i in range(64)]

        def run_round(what, drop=(), jobs=jobs):
            """64 streams (jobs[i]: the prompt's index and max_tokens), those in drop disconnected; the checks."""
            m0 = wait_idle(srv)
            out = [None] * 64
            dropped = {}

            def dropper(i, mode, arg):
                body = {"model": "m", "messages": [{"role": "user", "content": prompts[jobs[i][0]]}], "max_tokens": 800,
                        "temperature": 0, "ignore_eos": True, "stream": mode != "plain"}
                data = json.dumps(body).encode()
                got, t1 = b"", time.time()
                try:
                    s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
                    s.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
                              f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
                    while time.time() - t1 < 60:
                        if mode == "tokens":
                            if len(re.findall(rb'"content":"[^"]', got)) >= arg:
                                break
                            s.settimeout(60)
                        else:
                            left = arg - (time.time() - t1)
                            if left <= 0:
                                break
                            s.settimeout(left)
                        try:
                            k = s.recv(65536)
                        except socket.timeout:
                            break
                        if not k:
                            break
                        got += k
                    s.close()
                except OSError as e:
                    got += repr(e).encode()
                dropped[i] = (mode, arg, len(re.findall(rb'"content":"[^"]', got)), b"[DONE]" in got or b'"usage"' in got)

            ths = []
            for i in range(64):
                if i in drop:
                    ths.append(threading.Thread(target=dropper, args=(i, *drop[i])))
                else:
                    ths.append(threading.Thread(target=stream_chat, args=(cl, [{"role": "user", "content": prompts[jobs[i][0]]}],
                                                                          out, i), kwargs={"max_tokens": jobs[i][1], "temperature": 0}))
            t1 = time.time()
            for t in ths:
                t.start()
            for t in ths:
                t.join(max(1, 400 - (time.time() - t1)))
            wall = time.time() - t1
            check(not any(t.is_alive() for t in ths), f"{what}: every client returned within 400 s")
            bad = []
            for i in range(64):
                if i in drop:
                    continue
                o = out[i]
                want = expected(ref[jobs[i][0]], jobs[i][1], eog)
                if isinstance(o, Exception) or o is None or (o[0], o[1], o[2].completion_tokens) != want \
                        or o[3] != 1 or o[2].prompt_tokens != n_prompt[jobs[i][0]]:
                    bad.append((i, jobs[i], o, want))
            n_ok = 64 - len(drop)
            check(not bad, f"{what}: {n_ok} streams complete, each equal to tern run's for its prompt alone "
                           f"({len(bad)} not): {bad[:3]}")
            m = wait_idle(srv, timeout=30)
            d = lambda k: m[k] - m0[k]
            outcome = lambda o: d(f'tern_requests_total{{outcome="{o}"}}')
            check(outcome("finished") == n_ok and outcome("cancelled") == len(drop) and outcome("failed") == 0
                  and outcome("rejected") == 0,
                  f"{what}: the server's outcomes: finished {outcome('finished')} of {n_ok}, cancelled "
                  f"{outcome('cancelled')} of {len(drop)}, failed {outcome('failed')}, rejected {outcome('rejected')}")
            if not drop:
                gen = sum(expected(ref[jobs[i][0]], jobs[i][1], eog)[2] for i in range(64))
                check(d("tern_generation_tokens_total") == gen,
                      f"{what}: generated tokens {d('tern_generation_tokens_total')} = the {gen} the streams got")
            check(m["tern_requests_running"] == 0 and m["tern_requests_waiting"] == 0 and m["tern_kv_blocks_sequences"] == 0
                  and m["tern_kv_blocks_cached_idle"] == m["tern_kv_blocks_cached"]
                  and m["tern_kv_blocks_used"] == m["tern_kv_blocks_cached"],
                  f"{what}: afterwards running {m['tern_requests_running']}, waiting {m['tern_requests_waiting']}, blocks: "
                  f"used {m['tern_kv_blocks_used']}, by sequences {m['tern_kv_blocks_sequences']}, cached "
                  f"{m['tern_kv_blocks_cached']} ({m['tern_kv_blocks_cached_idle']} idle)")
            print(f"t_server: load: {what}: {wall:.1f} s, {d('tern_generation_tokens_total'):.0f} tokens generated, "
                  f"{d('tern_prompt_tokens_total'):.0f} prompt tokens run, {d('tern_prefix_cache_hit_tokens_total'):.0f} "
                  f"from the prefix cache; KV blocks cached {m['tern_kv_blocks_cached']:.0f} of "
                  f"{m['tern_kv_blocks_total']:.0f}; RSS {srv.rss_kb() / 1024:.0f} MiB", flush=True)
            return dropped

        def drops():
            """24 of the 64, each dropped after k streamed tokens, or after t seconds (streaming or not)."""
            d = {}
            for i in rng.sample(range(64), 24):
                mode = rng.choice(["tokens", "stream", "plain"])
                d[i] = (mode, rng.randint(1, 6) if mode == "tokens" else round(rng.uniform(0.3, 2.5), 2))
            return d

        def drop_round(what):
            dropped = run_round(what, drops())
            early = sum(1 for v in dropped.values() if v[2] == 0)
            check(not any(v[3] for v in dropped.values()), f"{what}: no dropped request had finished: {dropped}")
            check(all(v[2] >= v[1] for v in dropped.values() if v[0] == "tokens"),
                  f"{what}: the drops after k tokens saw k tokens: {[v for v in dropped.values() if v[0] == 'tokens']}")
            print(f"t_server: load: {what}: {early} of 24 dropped before their first token, {24 - early} after", flush=True)

        run_round("64 streams")
        drop_round("64 streams, 24 dropped")
        # the warm-up ends with all 64 decoding in one step: the per-step buffers at their largest (the logits rows)
        run_round("64 streams of one prompt", jobs=[(1, 16)] * 64)
        rss1 = srv.rss_kb()
        run_round("64 streams again")
        drop_round("64 streams, 24 dropped again")
        rss2 = srv.rss_kb()
        check(rss2 <= rss1 * 1.05, f"RSS after the run {rss2} kB within 5% of after the warm-up {rss1} kB "
                                   f"({(rss2 / rss1 - 1) * 100:+.1f}%)")
        print(f"t_server: load: RSS {rss1} kB after the warm-up, {rss2} kB after the run "
              f"({(rss2 / rss1 - 1) * 100:+.1f}%)", flush=True)
    finally:
        srv.stop()


class Poller:
    """/metrics over one keep-alive connection (a poll every few ms without a connection thread each time)."""

    def __init__(self, srv):
        self.c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)

    def get(self):
        self.c.request("GET", "/metrics", headers={"Authorization": f"Bearer {KEY}"})
        m = {}
        for line in self.c.getresponse().read().decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                m[k] = float(v)
        return m

    def until(self, cond, timeout=30):
        """The first metrics that satisfy cond (polled every 2 ms), or the last ones after timeout."""
        t0 = time.time()
        while True:
            m = self.get()
            if cond(m) or time.time() - t0 > timeout:
                return m
            time.sleep(0.002)


def raw_stream(srv, body):
    """A streaming /v1/completions on a raw socket (the test closes it when it likes)."""
    data = json.dumps({**body, "model": "m", "stream": True}).encode()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    s.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return s


def stream_tokens(got):
    """Tokens in the SSE bytes got so far (each event's logprobs.tokens; an event cut short counts as one: the server
    published it)."""
    n = 0
    for line in got.split(b"\n"):
        if line.startswith(b"data: {"):
            try:
                lp = json.loads(line[6:])["choices"][0]["logprobs"]
                n += len(lp["tokens"]) if lp else 0
            except ValueError:
                n += 1
    return n


def small_pool_check():
    """A server of one sequence and a 16-block KV pool (--parallel 1 -c 256, blocks of 16) with 32-token steps
    (--batch-tokens 32), every prompt token ids (so its blocks are exact), each check alone on the server:

    - LRU eviction: A (80 tokens, 5 blocks), B (80), A' (A + 8: touches A's blocks), then C (136 tokens: 9 blocks, 6
      free) must evict 3 idle blocks: B's, the least recently used, its tail first (docs/ledger.md 2026-12-02). C is
      served (a cache that never evicts fails it: KV cache full); /metrics says 3 evicted and 15 of 16 blocks used;
      A'' (A + 1) gets all 80 of A's tokens cached (the most recently used prefix survived), B' (B + 1) only B's
      first 2 blocks (32: its tail went first; an MRU eviction gives A'' 0 and B' 80, a head-first one B' 0).
    - a disconnect mid-decode and one mid-prefill free the sequence within one step: the step in flight when the
      client closes finishes (a step is not interrupted), and the scheduler, which polls every running request's
      socket for a hang-up before each step, frees it before the next. So N = 1: exactly one step after the last one
      the client saw (decode: the step of the last token it read; prefill: the chunk boundary it saw in /metrics).
      That step's end is also the first /metrics with the request gone: running 0 and no block held by a sequence.
      Three decode disconnects (after 3, 12, 30 tokens) and one prefill disconnect, each with one retry: a try reads 2
      when the client, descheduled on a loaded box, closes after the step in flight ended but before that step's
      token reached it (a decode step is ~6 ms; 250 of 250 disconnects read 1 on the dev box, 60 of them beside 4 busy
      loops). The server's misses repeat: a hang-up noticed only by the connection thread as it wakes for the next
      token read 2 in 35 of 40; a cancel mid-prefill honoured only after the prompt runs every remaining chunk.
    - afterwards the server holds the descriptors it held before the requests (the scheduler's dup of each client
      socket is closed with its request)."""
    srv = Server("--api-key", KEY, "--parallel", "1", "-c", "256", "--batch-tokens", "32", "-t", "2")
    fds = lambda: len(os.listdir(f"/proc/{srv.p.pid}/fd"))
    try:
        n_fd = fds()
        lru_check(srv)
        cancel_check(srv)
        t0 = time.time()
        while fds() != n_fd and time.time() - t0 < 5:  # the connection threads close their sockets as they end
            time.sleep(0.05)
        check(fds() == n_fd, f"descriptors after the requests {fds()} = before {n_fd}")
    finally:
        srv.stop()


def timeout_check():
    """--timeout 1: a connection that sends nothing, and a kept-alive one after its answer, are closed after ~1 s of
    idleness (150 idle sockets held every client out for the old fixed 600 s); an answer that takes longer than that
    to make is not cut (idle means waiting on the client, not on the model)."""
    srv = Server("--timeout", "1", "-c", "1024", "-t", "2")
    try:
        idle = socket.create_connection(("127.0.0.1", srv.port))
        idle.settimeout(20)
        t0 = time.time()
        got = idle.recv(16)
        t_idle = time.time() - t0
        check(got == b"" and 0.5 < t_idle < 8, f"timeout: an idle connection closed after {t_idle:.1f} s ({got!r})")
        idle.close()
        t0 = time.time()
        r = srv.client().completions.create(model="m", prompt="Once upon a time", max_tokens=800, temperature=0)
        dt = time.time() - t0
        check(dt > 1.5 and r.usage.completion_tokens >= 100 and r.choices[0].text,
              f"timeout: an answer of {dt:.1f} s under --timeout 1 arrives whole ({r.usage.completion_tokens} tokens)")
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=20)
        c.request("GET", "/health")
        ok = c.getresponse().read()
        time.sleep(2.5)
        try:
            c.request("GET", "/health")
            again = c.getresponse().status
        except (http.client.HTTPException, OSError):
            again = None
        check(b"ok" in ok and again is None, f"timeout: a kept-alive connection closed when idle (second request: {again})")
        print(f"t_server: timeout: an idle connection closed after {t_idle:.1f} s; a {dt:.1f} s answer whole", flush=True)
    finally:
        srv.stop()


def swa_check():
    """The sliding-window layers' own KV pool (the default; --swa-full turns it off) on gemma-3-270m (window 512), when
    present: a ~800-token
    prompt (its first window rows released during the prefill, chunks of --batch-tokens 128) completes greedily as
    `tern run` does with one pool; the same prompt again resumes from the prefix cache (its last blocks' window rows
    were kept when they were keyed) and completes the same; a prompt sharing its first ~160 tokens resumes from their
    blocks (keyed at the end of the first 128-token step, before any window row was released) and completes as `tern
    run` does. (A prefix whose window rows went before they were keyed attaches nothing: tests/test_swa.c.)"""
    if not os.path.exists(G3):
        print("t_server: swa: models/gemma-3-270m-q4_k_m.gguf not present, skipped", flush=True)
        return
    prompt = "The quick brown fox jumps over the lazy dog. " * 80
    full = ("--temp", "0", "--swa-full")
    want = tern_run(prompt, 12, full, model=G3)
    check(tern_run(prompt, 12, model=G3) == want, "tern run (window pool by default) = tern run --swa-full")
    srv = Server("--api-key", KEY, "--parallel", "2", "-c", "1024", "-t", "2", "--chat-template", "gemma", model=G3)
    try:
        srv.log.seek(0)
        line = srv.log.read()
        check("window pool" in line and "prefix cache on" in line, f"swa: startup line: {line[-400:]}")
        cl = srv.client()
        got = []
        for k in range(2):
            r = cl.completions.create(model="m", prompt=prompt, max_tokens=12, temperature=0)
            cached = r.usage.prompt_tokens_details.cached_tokens if r.usage.prompt_tokens_details else 0
            got.append(cached)
            check(r.choices[0].text == want and r.usage.prompt_tokens > 600 and (cached > 500 if k else not cached),
                  f"swa: request {k}: {r.choices[0].text!r} vs tern run {want!r}, {cached} cached of "
                  f"{r.usage.prompt_tokens}")
        other = "The quick brown fox jumps over the lazy dog. " * 16 + "A cat sat on the mat and looked at it. " * 60
        want2 = tern_run(other, 12, full, model=G3)
        r = cl.completions.create(model="m", prompt=other, max_tokens=12, temperature=0)
        cached = r.usage.prompt_tokens_details.cached_tokens if r.usage.prompt_tokens_details else 0
        check(r.choices[0].text == want2 and 128 <= cached < 200 and cached % 16 == 0,
              f"swa: a prompt sharing ~160 tokens: {r.choices[0].text!r} vs {want2!r}, {cached} cached")
        # gemma's template has no system turn: a system message folds into the next user one (llama.cpp's formatter);
        # one with no user message after it is refused rather than dropped from the prompt
        sysmsg = {"role": "system", "content": "S"}
        st, _, b = srv.request("POST", "/apply-template", {"messages": [sysmsg, {"role": "user", "content": "U"}]})
        check(st == 200 and "S\n\nU" in json.loads(b)["prompt"], f"gemma: a leading system message folded: {b[:200]!r}")
        for msgs_g in ([{"role": "user", "content": "U"}, sysmsg], [sysmsg]):
            st, _, b = srv.request("POST", "/v1/chat/completions", {"model": "m", "messages": msgs_g, "max_tokens": 2})
            e = json.loads(b).get("error", {}) if st != 200 else {}
            check(st == 400 and e.get("param") == f"messages[{len(msgs_g) - 1}]" and "no user message after" in
                  e.get("message", ""), f"gemma: a system message with no user message after it: {st} {b[:200]!r}")
        m = srv.metrics()
        check(m.get("tern_kv_window_blocks_total", 0) > 0 and
              0 < m.get("tern_kv_window_blocks_used", 0) <= m["tern_kv_window_blocks_total"],
              f"swa: /metrics' window pool: {m.get('tern_kv_window_blocks_used')} of {m.get('tern_kv_window_blocks_total')}")
        print(f"t_server: swa: cached tokens {got[0]}, {got[1]} of a repeated prompt, {cached} of one sharing its "
              f"first ~160 tokens; window pool {m.get('tern_kv_window_blocks_used')} of "
              f"{m.get('tern_kv_window_blocks_total')} blocks", flush=True)
    finally:
        srv.stop()


def lru_check(srv):
    def comp(ids):
        st, _, b = srv.request("POST", "/v1/completions", {"model": "m", "prompt": ids, "max_tokens": 1, "temperature": 0})
        u = json.loads(b).get("usage") if st == 200 else None
        m = srv.metrics()
        return (st, u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"]) if u else (st, b[:200]), m

    A, B, C = list(range(1000, 1080)), list(range(2000, 2080)), list(range(3000, 3136))
    m0 = srv.metrics()
    check(m0["tern_kv_blocks_total"] == 16 and m0["tern_kv_block_size"] == 16 and m0["tern_kv_blocks_used"] == 0,
          f"LRU: a fresh pool of 16 blocks of 16: {m0['tern_kv_blocks_total']} of {m0['tern_kv_block_size']}, "
          f"used {m0['tern_kv_blocks_used']}")
    ra, _ = comp(A)
    rb, mb = comp(B)
    ra1, ma1 = comp(A + list(range(5000, 5008)))
    check(ra == (200, 80, 0) and rb == (200, 80, 0) and ra1 == (200, 88, 80) and mb["tern_kv_blocks_used"] == 10
          and ma1["tern_kv_blocks_used"] == 10 and ma1["tern_kv_blocks_evicted_total"] == 0,
          f"LRU: A, B cached whole (10 blocks), A' hits A's 80 tokens: {ra} {rb} {ra1}, used {ma1['tern_kv_blocks_used']}")
    rc, mc = comp(C)
    check(rc == (200, 136, 0), f"LRU: C is served with the pool full (the cache evicts): {rc}")
    ev = mc["tern_kv_blocks_evicted_total"] - ma1["tern_kv_blocks_evicted_total"]
    check(ev == 3 and mc["tern_kv_blocks_used"] == 15 and mc["tern_kv_blocks_cached"] == 15 and mc["tern_kv_blocks_sequences"] == 0,
          f"LRU: C evicted 3 blocks ({ev:.0f}), 15 of 16 used, all cached ({mc['tern_kv_blocks_used']:.0f} used, "
          f"{mc['tern_kv_blocks_cached']:.0f} cached)")
    ra2, _ = comp(A + [6000])
    rb1, mb1 = comp(B + [7000])
    hits = mb1["tern_prefix_cache_hit_tokens_total"] - m0["tern_prefix_cache_hit_tokens_total"]
    check(ra2 == (200, 81, 80), f"LRU: A'' (A, the most recently used) survived C whole: {ra2}")
    check(rb1 == (200, 81, 32), f"LRU: B' (B, the least recently used) lost its tail to C, its first 2 blocks kept: {rb1}")
    check(hits == 80 + 80 + 32, f"LRU: /metrics' prefix-cache hit tokens {hits:.0f} = A' 80 + A'' 80 + B' 32")
    got = lambda r: r[2] if len(r) == 3 else f"HTTP {r[0]}"
    print(f"t_server: LRU: C evicted {ev:.0f} blocks; cached tokens of 81: A'' {got(ra2)}, B' {got(rb1)}; blocks used "
          f"{mc['tern_kv_blocks_used']:.0f} of {mc['tern_kv_blocks_total']:.0f}", flush=True)


def cancel_check(srv):
    pm = Poller(srv)
    gone = lambda m: m["tern_requests_running"] == 0
    cancelled = 'tern_requests_total{outcome="cancelled"}'

    def decode_drop(k, base):
        """A 20-token prompt (one step) streams; the client reads k tokens, then closes. Steps after the last token
        it read, and the first metrics without the request."""
        m0 = pm.until(gone)
        s = raw_stream(srv, {"prompt": list(range(base, base + 20)), "max_tokens": 200, "temperature": 0,
                             "ignore_eos": True, "logprobs": 0})
        got = b""
        while stream_tokens(got) < k:
            d = s.recv(65536)
            if not d:
                break
            got += d
        s.setblocking(False)  # what has arrived already counts too
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                got += d
        except BlockingIOError:
            pass
        n = stream_tokens(got)
        s.close()
        m1 = pm.until(gone)
        # one request alone: its first token came from step 1 (the prompt's one chunk), token i from step i
        return m1["tern_steps_total"] - m0["tern_steps_total"] - n, n, m0, m1

    def prefill_drop(base):
        """A 240-token prompt (8 chunks of 32); once /metrics shows its second chunk done, the client closes."""
        m0 = pm.until(gone)
        s = raw_stream(srv, {"prompt": [base + i for i in range(240)], "max_tokens": 8, "temperature": 0})
        p0 = m0["tern_prompt_tokens_total"]
        seen = pm.until(lambda m: m["tern_prompt_tokens_total"] - p0 >= 64)
        s.close()
        m1 = pm.until(gone)
        return m1["tern_steps_total"] - seen["tern_steps_total"], seen, m0, m1

    def released(m0, m1):
        return (m1["tern_requests_running"] == 0 and m1["tern_kv_blocks_sequences"] == 0
                and m1[cancelled] - m0[cancelled] == 1 and m1["tern_kv_blocks_used"] == m1["tern_kv_blocks_cached"])

    for i, k in enumerate((3, 12, 30)):
        tries = []
        for t in range(2):
            after, n, m0, m1 = decode_drop(k, 8000 + 1000 * i + 100 * t)
            tries.append((n, int(after), released(m0, m1)))
            if after <= 1:
                break
        check(tries[-1][1] == 1 and tries[-1][2],
              f"a disconnect after {k} tokens frees the sequence within one step: (tokens read, steps after the last, "
              f"released) {tries}")
        print(f"t_server: cancel mid-decode after {tries[-1][0]} tokens: the sequence left {tries[-1][1]} step after the "
              f"last token read{'' if len(tries) == 1 else f' (tries {tries})'}", flush=True)
    tries = []
    for t in range(2):
        after, seen, m0, m1 = prefill_drop(9000 + 300 * t)
        ran = m1["tern_prompt_tokens_total"] - seen["tern_prompt_tokens_total"]
        tries.append((int(seen["tern_prompt_tokens_total"] - m0["tern_prompt_tokens_total"]), int(after), int(ran),
                      released(m0, m1) and m1["tern_generation_tokens_total"] == m0["tern_generation_tokens_total"]))
        if after <= 1:
            break
    check(tries[-1][1] == 1 and tries[-1][2] == 32 and tries[-1][3],
          f"a disconnect mid-prefill frees the sequence within one step (one 32-token chunk more, none generated): "
          f"(prompt tokens run when it closed, steps after, prompt tokens after, released) {tries}")
    print(f"t_server: cancel mid-prefill: closed after {tries[-1][0]} of 240 prompt tokens, the sequence left "
          f"{tries[-1][1]} step later ({tries[-1][2]} tokens more){'' if len(tries) == 1 else f' (tries {tries})'}",
          flush=True)
    pm.c.close()


def free_port():
    """A port no one listens on now (the kernel's pick; released at once, so `tern serve --port` can take it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def health_check():
    """GET /health from the moment the process starts: 503 (an OpenAI error, "Loading model", Retry-After) while the
    model loads, then 200, never back; an API route in the same window is a 503 too. The server listens before it
    loads (cli/serve.c). Gemma 3 270M's load (its 262k-token vocabulary) keeps the window at 0.08-0.3 s on the 2-core
    dev box (1.3 s with two busy loops beside it), the default model's at 0.05-0.2 s (20-40 polls), so Gemma is used
    when models/ has it (make test fetches it) and the default model otherwise."""
    gemma = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
    model = gemma if os.path.exists(gemma) else MODEL
    port = free_port()
    log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"t_server_{os.getpid()}_health.log"), "w+")
    t0 = time.time()
    p = subprocess.Popen([TERN, "serve", "-m", model, "--port", str(port), "-t", "2", "-c", "512"], stderr=log,
                         stdout=subprocess.DEVNULL, cwd=ROOT)
    seen = []  # (route, status, headers, body, s since the start) in the order asked; "refused" before it listens
    while time.time() - t0 < 30 and p.poll() is None and sum(x[1] == 200 for x in seen) < 4:
        for route in ("/health", "/v1/completions"):
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                if route == "/health":
                    c.request("GET", route)
                else:
                    c.request("POST", route, body=json.dumps({"model": "m", "prompt": "Hi", "max_tokens": 1,
                                                              "temperature": 0}),
                              headers={"Content-Type": "application/json"})
                r = c.getresponse()
                seen.append((route, r.status, {k.lower(): v for k, v in r.getheaders()}, r.read(), time.time() - t0))
                c.close()
            except ConnectionRefusedError:
                seen.append((route, "refused", {}, b"", time.time() - t0))
        time.sleep(0.001)
    order = "".join({"refused": "r", 503: "5", 200: "2"}.get(x[1], "x") for x in seen)
    loading = [x for x in seen if x[1] == 503]

    def loading_error(x):
        try:
            e = json.loads(x[3])["error"]
        except Exception:
            return False
        return e["message"] == "Loading model" and e["type"] and x[2].get("retry-after") == "1"

    check(re.fullmatch(r"r*5+2+", order) is not None, f"refused, then 503 while loading, then 200 and never back: {order}")
    check({x[0] for x in loading} == {"/health", "/v1/completions"},
          f"/health and an API route both answer 503 while the model loads: {order[:40]}")
    check(loading and all(loading_error(x) for x in loading),
          f"each an OpenAI error 'Loading model' with Retry-After: {[(x[1], x[2].get('retry-after'), x[3][:80]) for x in loading][:3]}")
    ok = [x for x in seen if x[0] == "/health" and x[1] == 200]
    check(ok and json.loads(ok[0][3]) == {"status": "ok"}, f"/health once ready: {ok[:1]}")
    comp = [x for x in seen if x[0] == "/v1/completions" and x[1] == 200]
    check(comp and json.loads(comp[0][3])["usage"]["completion_tokens"] == 1, f"a completion once ready: {comp[:1]}")
    if loading and ok:
        print(f"t_server: /health: 503 from {loading[0][4]:.3f} s to {loading[-1][4]:.3f} s ({len(loading)} answers), 200 "
              f"from {min(x[4] for x in seen if x[1] == 200):.3f} s after the start ({os.path.basename(model)})", flush=True)
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    log.seek(0)
    check(p.returncode == 0, f"the loading server exits cleanly: {p.returncode} {log.read()[-1000:]}")
    log.close()
    os.unlink(log.name)


def signal_check():
    """SIGTERM, then SIGINT, each with a stream running: the listening socket closes at once (a new connection is
    refused), the stream, too long for the 3 s of grace, is cancelled (an error event: the SDK's APIError, printed; a
    cut connection is accepted too: a tester saw one under load, not reproduced here), and the process exits cleanly
    within 5 s. (With 400 tokens, as before, the stream completed inside the grace and the cancel path went untested.)"""
    for sig in (signal.SIGTERM, signal.SIGINT):
        name = signal.Signals(sig).name
        srv = Server("--parallel", "2", "-c", "2560")
        cl = srv.client()
        arrivals, end = [], []

        def stream():
            try:
                for ch in cl.chat.completions.create(model="m", messages=[{"role": "user", "content": "Write a long story."}],
                                                     max_tokens=2400, temperature=0.7, stream=True,
                                                     extra_body={"ignore_eos": True}):
                    if ch.choices and ch.choices[0].delta.content:
                        arrivals.append(time.time())
                end.append("completed")
            except Exception as e:  # the server cancels it past its grace: an error event or a cut connection
                end.append(type(e).__name__)

        t = threading.Thread(target=stream)
        t.start()
        t0 = time.time()
        while len(arrivals) < 2 and time.time() - t0 < 60 and t.is_alive():
            time.sleep(0.01)
        t0 = time.time()
        srv.p.send_signal(sig)
        time.sleep(0.3)
        try:
            st = srv.request("GET", "/health", timeout=5)[0]
        except OSError as e:  # ConnectionRefusedError
            st = type(e).__name__
        check(st in ("ConnectionRefusedError", 503), f"{name}: a new request is refused once stopping: {st}")
        try:
            rc = srv.p.wait(8)
        except subprocess.TimeoutExpired:
            rc = None
        dt = time.time() - t0
        check(len(arrivals) >= 2 and rc == 0 and dt < 5.0, f"{name} mid-stream: exit {rc} in {dt:.2f} s")
        t.join(10)
        check(not t.is_alive() and end and end != ["completed"],
              f"{name}: the stream, past the grace, ended with the server ({end})")
        print(f"t_server: {name} mid-stream: exit in {dt:.2f} s, the stream {end[0] if end else '?'} after "
              f"{len(arrivals)} tokens", flush=True)
        srv.stop()


def queue_check():
    srv = Server("--parallel", "1", "--queue", "1", "-c", "512")
    res = []

    def one():
        res.append(srv.request("POST", "/v1/completions", {"model": "m", "prompt": "Hello", "max_tokens": 60,
                                                           "temperature": 0, "ignore_eos": True}))

    ths = [threading.Thread(target=one) for _ in range(4)]
    for t in ths:
        t.start()
        time.sleep(0.05)
    for t in ths:
        t.join(120)
    busy = [r for r in res if r[0] == 503]
    check(len(busy) >= 1 and all(r[1].get("retry-after") == "1" and json.loads(r[2])["error"]["message"] for r in busy),
          f"a full queue: 503 with Retry-After: {[(r[0], r[1].get('retry-after')) for r in res]}")
    check(any(r[0] == 200 for r in res), "the admitted requests completed")
    srv.stop()


if __name__ == "__main__":
    sys.exit(main())
