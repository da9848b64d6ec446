#!/usr/bin/env python3
"""progress_pty.py TERN MODEL: the progress bars of `tern run` on stderr appear on a terminal and only there
(issue 28: "a progress bar on stderr (TTY only) for loads over ~1 s and prefills over ~2 s"; tests/t_cli.sh runs it).

The prompt: the first ~12,000 bytes of tests/fixtures/perplexity/genesis.txt (2,957 tokens with SmolLM2), run with
-t 1 -n 1. Its prefill took 52 s on the 2-core dev box with another build beside it; the bar shows after the first
256-token chunk that ends past 2 s, so each case stops the process once it has seen what it needs (about 10 s here).

Checks, one line each on stdout ("ok NAME" or "FAIL NAME: why"):
  tty load     stderr a terminal: the load line "loading DESC: 100%" is shown
  tty bar      stderr a terminal: "prefill [###   ] done/total tokens, R tok/s, S s left" shows, total = the prompt's
               tokens (tern tokenize), done a whole number of 256-token chunks below total, 30 * done / total marks
  tty advance  a later bar shows more tokens done than the first
  pipe quiet   stderr a pipe, the prefill running past 4 s (the prompt echoed on stdout 4 s before, the process still
               prefilling): nothing on stderr, no bar, no load line, no carriage return
Bounded: every wait has a timeout, the child is killed at the end whatever happened. A machine that prefills the
prompt in under 4 s fails "pipe quiet" with that reason: the prompt must then grow (the test cannot tell quiet
from finished)."""
import os
import re
import select
import subprocess
import sys
import tempfile
import time

tern, model = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
text = open(os.path.join(here, "fixtures", "perplexity", "genesis.txt"), "rb").read()
text = text[:text.index(b"\n", 12000)]  # whole lines, no final newline (run would drop one; tokenize -f keeps it)
tmp = tempfile.mkdtemp()
prompt = os.path.join(tmp, "prompt.txt")
open(prompt, "wb").write(text)
ids = subprocess.run([tern, "tokenize", "-m", model, "-f", prompt, "--ids"], capture_output=True, check=True,
                     timeout=120).stdout.decode()
n_prompt = len(re.findall(r"\d+", ids))
args = [tern, "run", "-m", model, "-f", prompt, "-n", "1", "-t", "1", "--temp", "0", "-ub", "256"]

results = []


def check(name, cond, why=""):
    results.append(f"ok {name}" if cond else f"FAIL {name}: {why}")


def stop(p):
    if p.poll() is None:
        p.kill()
    p.wait(timeout=30)


# ---- stderr a terminal: stdout a file, stderr the pty's slave side
master, slave = os.openpty()
p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=open(os.path.join(tmp, "out1"), "wb"), stderr=slave)
os.close(slave)
BAR = re.compile(rb"\rprefill \[([# ]{30})\] (\d+)/(\d+) tokens, \d+ tok/s, \d+ s left ")
buf, bars = b"", []
try:
    end = time.time() + 240
    while time.time() < end and len(bars) < 2:
        if not select.select([master], [], [], 0.5)[0]:
            continue
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child has exited and closed the terminal
            break
        if not chunk:
            break
        buf += chunk
        bars = BAR.findall(buf)
finally:
    stop(p)
    os.close(master)
check("tty load", re.search(rb"\rloading [^\r]*: 100%", buf) is not None, "no load line: " + repr(buf[:300]))
if not bars:
    check("tty bar", False, f"no bar in 240 s (rc {p.returncode}): " + repr(buf[-400:]))
    check("tty advance", False, "no bar")
else:
    marks, done, total = bars[0][0], int(bars[0][1]), int(bars[0][2])
    check("tty bar", total == n_prompt and 0 < done < total and done % 256 == 0 and
          marks == b"#" * (30 * done // total) + b" " * (30 - 30 * done // total),
          f"bar {bars[0]!r}, the prompt has {n_prompt} tokens")
    check("tty advance", len(bars) >= 2 and int(bars[1][1]) > done, f"bars {bars!r}")

# ---- stderr a pipe (a file here): the same run, stopped 4 s into its prefill
out, err = os.path.join(tmp, "out2"), os.path.join(tmp, "err2")
p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=open(out, "wb"), stderr=open(err, "wb"))
try:
    end, echoed = time.time() + 120, None
    while time.time() < end and p.poll() is None:
        if echoed is None and os.path.getsize(out) >= len(text):  # the echo is flushed just before the prefill
            echoed = time.time()
        if echoed is not None and time.time() - echoed > 4.0:
            break
        time.sleep(0.05)
    running = p.poll() is None and echoed is not None
finally:
    stop(p)
e = open(err, "rb").read()
if not running:
    check("pipe quiet", False, f"the prefill did not run 4 s (echoed: {echoed is not None}, rc {p.returncode}); "
          "a longer prompt is needed on this machine: " + repr(e[-300:]))
else:
    check("pipe quiet", e == b"", "stderr: " + repr(e[:300]))

for r in results:
    print(r)
sys.exit(0 if all(r.startswith("ok ") for r in results) else 1)
