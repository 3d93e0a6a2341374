"""Runs a command on a pseudo-terminal, as a user's shell would, for the CLI's terminal tests.

    python3 pty-run.py [--stdin TEXT] [--no-ctty] -- COMMAND ARGS...

The command's stdout and stderr are the terminal; its stdin is the terminal too, or with --stdin
a pipe that carries TEXT (a prompt piped in on a terminal). The terminal is the command's
controlling terminal (/dev/tty), unless --no-ctty. What this process reads on its stdin is typed
on the terminal (a Ctrl-C is the byte 0x03); what the terminal shows goes to this process's
stdout, after a first line "[pty-run pid N]" naming the command's process. Exits with the
command's exit code, or 128 + the signal that ended it.
"""

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios


def main() -> int:
    args = sys.argv[1:]
    stdin_text = None
    ctty = True
    while args:
        flag = args.pop(0)
        if flag == "--":
            break
        if flag == "--stdin":
            stdin_text = args.pop(0)
        elif flag == "--no-ctty":
            ctty = False
        else:
            raise SystemExit(f"pty-run: unknown flag {flag}")
    if not args:
        raise SystemExit("pty-run: no command")

    master, slave = os.openpty()
    # Wide enough that no line the tests look for wraps.
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 240, 0, 0))

    def become_session_leader() -> None:
        # A new session; with a controlling terminal, this one (fd 1 is the terminal here).
        os.setsid()
        if ctty:
            fcntl.ioctl(1, termios.TIOCSCTTY, 0)

    child = subprocess.Popen(
        args,
        stdin=subprocess.PIPE if stdin_text is not None else slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=become_session_leader,
        close_fds=True,
    )
    os.close(slave)
    if stdin_text is not None:
        child.stdin.write(stdin_text.encode())
        child.stdin.close()
    os.write(1, f"[pty-run pid {child.pid}]\n".encode())

    typed = sys.stdin.fileno()
    sources = [master, typed]
    while True:
        ready, _, _ = select.select(sources, [], [], 0.1)
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every process holding the terminal is gone
                data = b""
            if not data:
                break
            os.write(1, data)
        if typed in ready:
            data = os.read(typed, 65536)
            if data:
                os.write(master, data)
            else:
                sources.remove(typed)
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
