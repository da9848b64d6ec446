#!/usr/bin/env python3
"""chat_prefill_pty.py TERN MODEL: Ctrl-C during a long message's prefill in `tern chat` on a terminal (issue 28:
"Ctrl-C stops the reply (or the prompt's prefill) and returns to the prompt"; tests/t_cli.sh runs it).

A person pastes a long message (the first ~12,000 bytes of tests/fixtures/perplexity/genesis.txt on one line, about
3,000 tokens with SmolLM2) into `tern chat -t 1` through a pseudo-terminal, sees the prefill bar (it shows once the
prefill has run 2 s), presses Ctrl-C, then asks a short question. Checks, one line each on stdout ("ok NAME" or
"FAIL NAME: why"):
  prefill bar      the prefill bar of the long message shows (the prefill has run 2 s and is still running)
  prefill stopped  after Ctrl-C: the bar cleared, [interrupted], the prompt again; no reply text, no tok/s line
                   (those would mean the prefill had ended and a reply was stopped instead: the test then fails
                   saying the message must be longer, as it also does when no bar shows before the reply starts)
  forgotten        the short question's reply is the one a fresh piped `tern chat` with the same options gives to it
                   alone: the interrupted message is not in the conversation (were it kept, the question would follow
                   ~3,000 tokens of Genesis and get another reply)
Bounded: every wait has a timeout, the child is killed at the end whatever happened.

Timing, on the 2-core dev box: the prefill runs at 60-100 tok/s at -t 1, so the bar shows after the first 256-token
chunk ending past 2 s and the whole message would take 30-50 s; Ctrl-C is polled between chunks (a few seconds at
most). The paste is written as the terminal drains it, reading the echo as it comes (a 12 KB write at once would fill
the pty's buffers both ways and block)."""
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

tern, model = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
text = open(os.path.join(here, "fixtures", "perplexity", "genesis.txt"), "rb").read()
LONG = b" ".join(text[:text.index(b"\n", 12000)].split())  # one line: Enter would send it early
SHORT = b"What is the capital of France?"
# -n 40: the short question's reply cut at 40 tokens, the same cut in both runs; -t 1 keeps the long prefill slow
args = [tern, "chat", "-m", model, "--temp", "0", "-n", "40", "-t", "1"]
piped = subprocess.run(args, input=SHORT + b"\n", capture_output=True, timeout=120).stdout
assert piped.endswith(b"\n") and len(piped) > 10, piped
reply = piped[:-1].replace(b"\n", b"\r\n")  # the terminal turns the reply's newlines into CR LF

results = []


def check(name, cond, why=""):
    results.append(f"ok {name}" if cond else f"FAIL {name}: {why}")


pid, fd = pty.fork()
if pid == 0:
    os.execv(tern, args)
os.set_blocking(fd, False)
buf = b""


def pump(timeout):
    """Read what the terminal has within timeout seconds into buf; False once the child has closed it."""
    global buf
    if not select.select([fd], [], [], timeout)[0]:
        return True
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return True
    except OSError:  # EIO: the child has exited and closed the terminal
        return False
    buf += chunk
    return bool(chunk)


def read_until(pattern, timeout):
    """Read the terminal until the regex pattern (bytes) matches what came since the last call; the match (None if
    it did not). The text before the match is kept in read_until.before."""
    global buf
    end = time.time() + timeout
    while True:
        m = re.search(pattern, buf, re.S)
        if m:
            read_until.before = buf[:m.start()]
            buf = buf[m.end():]
            return m
        if time.time() >= end or not pump(0.05):
            return None


def paste(data, timeout):
    """Write data as the terminal takes it, reading its echo meanwhile; True if all of it went in time."""
    end = time.time() + timeout
    while data and time.time() < end:
        r, w, _ = select.select([fd], [fd], [], 0.05)
        if r:
            pump(0)
        if w:
            try:
                data = data[os.write(fd, data[:1024]):]
            except BlockingIOError:
                pass
    return not data


def settle():
    """A person reads the prompt before typing: keys sent the instant "> " shows can reach the terminal before libedit
    has switched it to raw mode (tests/chat_pty.py)."""
    time.sleep(0.3)


BAR = rb"\rprefill \[[# ]{30}\] (\d+)/(\d+) tokens, \d+ tok/s, \d+ s left "
LONGER = "the message must be longer for this machine (tests/chat_prefill_pty.py: LONG)"
try:
    if not read_until(rb"> ", 60):
        raise RuntimeError("no prompt: " + repr(buf[-300:]))
    settle()
    if not paste(LONG + b"\r", 120):
        raise RuntimeError("the terminal did not take the paste in 120 s: " + repr(buf[-300:]))
    # the bar, or else the reply's end (its tok/s line) or the prompt after it: the prefill ended before 2 s
    m = read_until(BAR + rb"|\[\d+ tokens, [^\]]*\]", 180)
    if not m or not m.group(0).startswith(b"\rprefill"):
        check("prefill bar", False, ("the prefill ended without a bar, under 2 s: " + LONGER) if m else
              "no bar in 180 s: " + repr(buf[-300:]))
        raise RuntimeError("no bar")
    check("prefill bar", 0 < int(m.group(1)) < int(m.group(2)), "bar " + repr(m.group(0)))
    os.write(fd, b"\x03")
    # up to the next prompt: a reply stopped instead of the prefill shows its text and a tok/s line before it
    m = read_until(rb"\[interrupted\]\r\n(.*?)> ", 60)
    between = read_until.before if m else b""
    if not m:
        check("prefill stopped", False, (f"the prefill had ended, the reply too: {LONGER}: " if
                                         re.search(rb"\[\d+ tokens, ", buf) else
                                         "no [interrupted] and prompt in 60 s: ") + repr(buf[-400:]))
        raise RuntimeError("not stopped")
    # what came between: the echoed ^C and more bars, then the bar cleared (\r ESC[K); a reply's text or tok/s line
    # means the prefill ran to its end: Ctrl-C was not heeded if two chunks or more ended after it (their bars), else
    # it came too late for this machine
    rest = re.sub(BAR, b"", between).replace(b"^C", b"")
    late = len(re.findall(BAR, between.partition(b"^C")[2]))
    replied = rest != b"\r\x1b[K" and rest.startswith(b"\r\x1b[K") or re.search(rb"\[\d+ tokens, ", m.group(1))
    check("prefill stopped", rest == b"\r\x1b[K" and not replied and late <= 1,
          (f"Ctrl-C did not stop the prefill: {late} chunks ended after it: " if late > 1 else
           f"the prefill had ended and a reply was stopped: {LONGER}: " if replied else
           "not the bar cleared, then [interrupted] and the prompt: ") + repr((between + m.group(0))[-400:]))
    settle()
    os.write(fd, SHORT + b"\r")
    ok = read_until(re.escape(SHORT) + rb"\r\n" + re.escape(reply) + rb"\r\n", 120)
    check("forgotten", ok, f"not the fresh chat's reply to {SHORT!r} ({reply[:80]!r}): " + repr(buf[-400:]))
except RuntimeError:
    pass
finally:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
names = ["prefill bar", "prefill stopped", "forgotten"]
for n in names:
    if not any(r.split(":")[0] in (f"ok {n}", f"FAIL {n}") for r in results):
        results.append(f"FAIL {n}: not reached (an earlier step failed)")
print("\n".join(results))
sys.exit(0 if all(r.startswith("ok ") for r in results) else 1)
