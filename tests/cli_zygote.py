"""A warm interpreter that starts `ragtui` processes for the CLI tests (tests/cli_run.py) without paying for the
heavy imports each time: it imports ragtui's CLI and every heavy library once (ragtui.heavy), then, for each
request, forks a child that becomes `python -m ragtui ARGS` as a fresh interpreter would run it: its own
environment, working directory, umask (the caller's), argv, stdin from /dev/null, stdout and stderr to files,
then the `ragtui` package run as __main__, ending through the interpreter's normal shutdown (atexit, non-daemon
threads, exit code, a traceback for an uncaught error). Each child is a real process with its own exit status; what it
cannot tell apart from a fresh start is only that the heavy modules are already in sys.modules. Several
children may run at once (a test's threads each starting a process).

    python -m tests.cli_zygote LOG    (reads one JSON request a line on stdin, answers on stdout)

A request: {"id", "args", "env", "cwd", "umask", "stdout", "stderr"}; the answers, each with the request's id: {"pid"}
once the child is forked, then {"returncode", "cpu_s"} once it has ended (the return code negative when a
signal killed it, as subprocess reports it; its CPU seconds, user and system). The first line out,
{"id": 0, "ready"}, says the imports are done.
"""

from __future__ import annotations

import gc
import json
import os
import runpy
import select
import sys
import threading
from typing import Any

# While a child runs, the zygote looks for its end this often (a child's end sends no byte to select on).
REAP_EVERY_S = 0.01


def preload() -> None:
    """What most `ragtui` commands import, so that a child's imports of it are lookups. Not pymupdf: importing
    it starts threads of its own, which a forked child would lack (a child that reads a PDF imports it)."""
    from ragtui import heavy

    heavy.load("llama_index")
    import llama_index.llms.openai_like  # noqa: F401

    import ragtui.cli  # noqa: F401


def become(request: dict[str, Any], control: list[int]) -> None:
    """In the child: take on the process a fresh `python -m ragtui ARGS` would be."""
    for fd in control:
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.path[0] = os.getcwd()          # as `python -m` puts the working directory first
    sys.argv = ["-m", *request["args"]]


def answer(fd: int, message: dict[str, Any]) -> None:
    os.write(fd, json.dumps(message).encode() + b"\n")      # one short line: one write, never split


def serve(requests: int, answers: int) -> None:
    running: dict[int, int] = {}       # pid -> request id
    pending = b""
    open_for_requests = True
    while open_for_requests or running:
        wait = REAP_EVERY_S if running else None
        readable = select.select([requests] if open_for_requests else [], [], [], wait)[0]
        if readable:
            chunk = os.read(requests, 65536)
            open_for_requests = bool(chunk)
            pending += chunk
        while b"\n" in pending:
            line, _, pending = pending.partition(b"\n")
            request = json.loads(line)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                become(request, [requests, answers])
                # SystemExit from ragtui/__main__.py (or an uncaught error) unwinds out of this loop and the
                # interpreter shuts down as it would at the end of a fresh `python -m ragtui`.
                runpy.run_module("ragtui", run_name="__main__", alter_sys=True)
                sys.exit(0)
            running[pid] = request["id"]
            answer(answers, {"id": request["id"], "pid": pid})
        while running:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                break
            answer(answers, {"id": running.pop(pid), "returncode": os.waitstatus_to_exitcode(status),
                             "cpu_s": usage.ru_utime + usage.ru_stime})


def main() -> None:
    # The answers go out on a copy of stdout; the zygote's own fd 1 and 2 go to its log (the caller checks
    # that nothing was written there: a warning printed while importing would be hidden from every child).
    # Requests come in on a copy of stdin; the zygote's own stdin is /dev/null, as each child's will be.
    requests, answers = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    preload()
    # What the imports built lives as long as any child: frozen, a child's garbage collections (the last one at
    # its exit above all) never walk it, nor write to its pages, which it shares with the zygote until then.
    # https://docs.python.org/3/library/gc.html#gc.freeze (a child's own objects are collected as usual)
    gc.collect()
    gc.freeze()
    if threading.active_count() != 1:       # a thread an import started would be missing from every child
        print(f"the imports started threads: {threading.enumerate()}", file=sys.stderr, flush=True)
    answer(answers, {"id": 0, "ready": os.getpid()})
    serve(requests, answers)


if __name__ == "__main__":
    main()
