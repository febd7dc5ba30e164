"""A warm interpreter that starts `ragtui` processes for the CLI tests (tests/cli_run.py) without paying for the
heavy imports each time: it imports ragtui's CLI and every heavy library once (ragtui.heavy), then, for each
request, forks a child that becomes `python -m ragtui ARGS` as a fresh interpreter would run it: its own
environment, working directory, argv, stdin from /dev/null, stdout and stderr to files, then the `ragtui`
package run as __main__, ending through the interpreter's normal shutdown (atexit, non-daemon threads, exit
code, a traceback for an uncaught error). Each child is a real process with its own exit status; what it
cannot tell apart from a fresh start is only that the heavy modules are already in sys.modules.

    python -m tests.cli_zygote LOG    (reads one JSON request a line on stdin, answers on stdout)

A request: {"args", "env", "cwd", "stdout", "stderr"}; the answers: {"pid"} once the child is forked, then
{"returncode"} (negative: killed by that signal, as subprocess reports it) once it has ended.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from typing import Any, TextIO


def preload() -> None:
    """What most `ragtui` commands import, so that a child's imports of it are lookups. Not pymupdf: importing
    it starts threads of its own, which a forked child would lack (a child that reads a PDF imports it)."""
    from ragtui import heavy

    heavy.load("llama_index")
    import llama_index.llms.openai_like  # noqa: F401

    import ragtui.cli  # noqa: F401


def become(request: dict[str, Any], control: list[TextIO]) -> None:
    """In the child: take on the process a fresh `python -m ragtui ARGS` would be."""
    for stream in control:
        stream.close()
    os.chdir(request["cwd"])
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


def serve(requests: TextIO, answers: TextIO) -> None:
    for line in requests:
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
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        answers.flush()


def main() -> None:
    # The answers go out on a copy of stdout; the zygote's own fd 1 and 2 go to its log (the caller checks
    # that nothing was written there: a warning printed while importing would be hidden from every child).
    # Requests come in on a copy of stdin; the zygote's own stdin is /dev/null, as each child's will be.
    requests = os.fdopen(os.dup(0), "r")
    answers = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    preload()
    answers.write(json.dumps({"ready": os.getpid()}) + "\n")
    answers.flush()
    serve(requests, answers)


if __name__ == "__main__":
    main()
