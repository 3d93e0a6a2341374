"""Runs a command on a pseudo-terminal, as a user's shell would, for the CLI's terminal tests.

    python3 pty-run.py [--stdin TEXT] [--no-ctty] -- COMMAND ARGS...
    python3 pty-run.py --mode-of TERMINAL

The command's stdout and stderr are the terminal; its stdin is the terminal too, or with --stdin
a pipe that carries TEXT (a prompt piped in on a terminal). The terminal is the command's
controlling terminal (/dev/tty), unless --no-ctty. What this process reads on its stdin is typed
on the terminal (a Ctrl-C is the byte 0x03); what the terminal shows goes to this process's
stdout, after a first line "[pty-run pid N tty PATH]" naming the command's process and the
terminal. Once the command is gone, a last line "[pty-run mode ...]" says the terminal's mode
(as --mode-of does). Exits with the command's exit code, or 128 + the signal that ended it.

--mode-of prints the mode of a terminal (by its path, while a command runs on it) as stty
would: "echo icanon isig" in cooked mode, "-echo -icanon -isig" in raw mode.
"""

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios


def mode(fd: int) -> str:
    flags = termios.tcgetattr(fd)[3]
    names = [("echo", termios.ECHO), ("icanon", termios.ICANON), ("isig", termios.ISIG)]
    return " ".join(name if flags & bit else f"-{name}" for name, bit in names)


def mode_of(path: str) -> int:
    # O_NOCTTY: looking must not make it this process's controlling terminal.
    fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        print(mode(fd))
    finally:
        os.close(fd)
    return 0


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["--mode-of"]:
        return mode_of(args[1])
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
    tty_path = os.ttyname(slave)
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
    os.write(1, f"[pty-run pid {child.pid} tty {tty_path}]\n".encode())

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
    # The master shares the terminal's settings: what the command left the terminal in.
    os.write(1, f"\n[pty-run mode {mode(master)}]\n".encode())
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
