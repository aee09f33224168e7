#!/usr/bin/env python3
"""pty_run.py - run a command on a pseudo-terminal, type at it, exit with its status.

    pty_run.py [--transcript FILE] STEP... -- COMMAND [ARG...]

The command gets a new session whose controlling terminal (stdin, stdout,
stderr and /dev/tty) is the pty, as in an interactive shell.  The steps run
in order:

    --type TEXT   type TEXT now (backslash escapes: \\n Enter, \\x04 Ctrl-D);
                  text typed before the command reads it is typeahead, kept by
                  the terminal until then
    --wait TEXT   wait until TEXT appears on the terminal (after the previous
                  --wait's match): a readiness signal, not a delay
    --intr        type Ctrl-C (the terminal sends SIGINT to the command)
    --kill        SIGKILL the command's process group (a crash, a machine
                  that went down)
    --hup         SIGHUP to the command's process group (the terminal closed)

--cols N gives the terminal N columns (24 rows); without it, the size is 0x0.
TERM is xterm when the caller's environment has none (a terminal emulator
always sets one; Forge draws no colour nor status line without it): pass
`-- env -u TERM COMMAND` for a terminal without one.

Then everything the command writes is read until it exits.  The exit status
is the command's (128+N when killed by signal N); 124 when it has not ended
after --limit seconds (default 100: a safety net only, nothing waits on it),
125 on a usage error.  --transcript FILE receives everything the terminal
showed, with CR LF turned into LF.
"""
import codecs
import os
import pty
import select
import signal
import sys
import time


def usage(msg):
    sys.stderr.write("pty_run.py: %s\n" % msg)
    sys.exit(125)


def main(argv):
    steps, transcript, limit, cols = [], None, 100.0, 0
    i = 0
    while i < len(argv) and argv[i] != "--":
        a = argv[i]
        if a in ("--type", "--wait", "--transcript", "--limit", "--cols"):
            if i + 1 >= len(argv):
                usage("%s needs a value" % a)
            v = argv[i + 1]
            if a == "--transcript":
                transcript = v
            elif a == "--limit":
                limit = float(v)
            elif a == "--cols":
                cols = int(v)
            else:
                steps.append((a[2:], codecs.decode(v, "unicode_escape").encode()))
            i += 2
        elif a == "--intr":
            steps.append(("type", b"\x03"))
            i += 1
        elif a in ("--kill", "--hup"):
            steps.append((a[2:], b""))
            i += 1
        else:
            usage("unknown option %r" % a)
    cmd = argv[i + 1:]
    if not cmd:
        usage("no command after --")

    pid, master = pty.fork()
    if pid == 0:
        try:
            if cols:
                import fcntl, struct, termios
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
            os.environ.setdefault("TERM", "xterm")
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)

    deadline = time.monotonic() + limit
    seen = b""         # everything shown so far
    mark = 0           # where the next --wait looks from
    done = False       # the terminal has no more output (the command ended)

    def pump(timeout):
        nonlocal seen, done
        r, _, _ = select.select([master], [], [], max(0.0, timeout))
        if not r:
            return
        try:
            data = os.read(master, 65536)
        except OSError:
            data = b""
        if not data:
            done = True
        seen += data

    status = None
    for kind, text in steps:
        if kind == "type":
            os.write(master, text)
            continue
        if kind in ("kill", "hup"):
            os.killpg(pid, signal.SIGKILL if kind == "kill" else signal.SIGHUP)
            continue
        while text not in seen[mark:]:
            if done or time.monotonic() > deadline:
                sys.stderr.write("pty_run.py: never saw %r on the terminal\n" % text)
                status = 124
                break
            pump(deadline - time.monotonic())
        if status is not None:
            break
        mark = seen.index(text, mark) + len(text)
    while status is None and not done and time.monotonic() < deadline:
        pump(min(1.0, deadline - time.monotonic()))
    if status is None and not done:
        status = 124
    if status == 124:
        os.kill(pid, signal.SIGKILL)
    _, st = os.waitpid(pid, 0)
    if status is None:
        status = os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)
    if transcript:
        with open(transcript, "wb") as f:
            f.write(seen.replace(b"\r\n", b"\n"))
    os.close(master)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
