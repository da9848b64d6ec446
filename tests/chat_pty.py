#!/usr/bin/env python3
"""chat_pty.py TERN MODEL: drive `tern chat` through a pseudo-terminal as a person would (tests/t_cli.sh runs it).

Checks, one line each on stdout ("ok NAME" or "FAIL NAME: why"):
  edit      the line is edited before Enter (Backspace, Left arrow, insert): the reply is the one the clean line gets
            through a pipe
  ctrl-c    Ctrl-C during a reply stops it, prints [interrupted] and the prompt comes back (the process lives)
  rate      stderr a terminal (no --verbose): the reply's tokens and tok/s, and its prompt's, follow it
  history   Up arrow brings back the previous line
  quit      Ctrl-C at the prompt ends the chat with status 0
Bounded: every wait has a timeout, the child is killed at the end whatever happened."""
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

tern, model = sys.argv[1], sys.argv[2]
# -n 1000: every reply here runs long (greedy SmolLM2 repeats itself to the limit on both prompts: about 10 s on 2
# cores), so a Ctrl-C sent after the first words always lands mid-reply, however fast the machine. With -n 60 the
# reply could end (0.4 s) before the test's Ctrl-C, which then quit the chat at the prompt (a CI failure, stop 29).
args = [tern, "chat", "-m", model, "--temp", "0", "-n", "1000", "-t", "2"]
QUESTION = b"What is the capital of France?"
piped = subprocess.run(args[:6] + ["-n", "60", "-t", "2"], input=QUESTION + b"\n", capture_output=True,
                       timeout=120).stdout.strip()
pid, fd = pty.fork()
if pid == 0:
    os.execv(tern, args)

buf = b""


def read_until(pattern, timeout):
    """Read the terminal until the regex pattern (bytes) matches what came since the last call; the match (None if
    it did not)."""
    global buf
    end = time.time() + timeout
    while time.time() < end:
        m = re.search(pattern, buf, re.S)
        if m:
            buf = buf[m.end():]
            return m
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
    return None


def send(b):
    os.write(fd, b)


def settle():
    """A person reads the prompt before typing: keys sent the instant "> " shows can reach the terminal before libedit
    has switched it to raw mode, and the kernel's cooked echo then shows the line twice."""
    time.sleep(0.3)


results = []


def check(name, cond, why=""):
    results.append(f"ok {name}" if cond else f"FAIL {name}: {why}")


try:
    check("prompt", read_until(rb"> ", 60), "no prompt: " + repr(buf[-300:]))
    settle()
    # edit: "What is the capitl of Frnce?" fixed by Left arrows and inserts, a stray X removed by Backspace
    send(b"What is the capitl of FrnceX")
    send(b"\x7f")                      # Backspace: the X
    send(b"?")
    send(b"\x1b[D" * 4 + b"a")          # Left x4: Fr|nce? -> France?
    send(b"\x1b[D" * 8 + b"a")          # capit|l of Fra -> capital
    send(b"\r")
    ok = read_until(rb"\r\n" + re.escape(piped[:80].replace(b"\n", b"\r\n")), 60)
    check("edit", len(piped) > 10 and ok, f"not the reply to {QUESTION!r} ({piped[:80]!r}): " + repr(buf[-400:]))
    send(b"\x03")                      # the rest of this reply is not needed
    m = read_until(rb"\[interrupted\].*?> ", 30)
    check("ctrl-c first", m, "reply not stopped: " + repr(buf[-400:]))
    check("rate", m and re.match(rb"\[interrupted\]\r\n\[\d+ tokens, \d+\.\d tok/s; prompt \d+ new tokens, \d+\.\d tok/s\]\r\n",
                                 m.group(0)), "no tok/s line after the reply: " + repr(m.group(0)[:300] if m else b""))
    # ctrl-c: a long reply, stopped after some text (its first 40 characters, not an echo of the line)
    settle()
    send(b"Write a very long story about a dragon who learns to cook.\r")
    started = read_until(rb"cook\.\r\n(?!(?:> )?Write a very).{40}", 60)
    send(b"\x03")
    ok = read_until(rb"\[interrupted\].*?> ", 30)
    check("ctrl-c", started and ok, "reply not stopped: " + repr(buf[-400:]))
    # history: Up arrow recalls the dragon line (its echo shows it again), then stop that reply too
    settle()
    send(b"\x1b[A")
    recalled = read_until(rb"dragon who learns to cook\.", 10)
    send(b"\r")
    started = read_until(rb"\r\n.{20}", 60)
    send(b"\x03")
    ok = read_until(rb"\[interrupted\].*?> ", 30)
    check("history", recalled and started and ok, "history line not recalled: " + repr(buf[-400:]))
    # quit: Ctrl-C at the prompt
    settle()
    send(b"\x03")
    end = time.time() + 20
    status = None
    while time.time() < end:
        read_until(rb"$^", 0.1)  # drain
        w, st = os.waitpid(pid, os.WNOHANG)
        if w == pid:
            status = st
            break
    check("quit", status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
          f"status {status!r}")
finally:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
print("\n".join(results))
