"""`ragtui serve`: the same TUI in a web browser, through textual-serve.

Each browser tab that opens the page starts its own `ragtui` process (the TUI,
with this command's configuration flags) and talks to it over a websocket, at
most `serve.max_sessions` at once. Every request needs the token printed at
start and must name a served address in Host and Origin (ragtui/serve/guard.py),
which keeps other web pages and DNS rebinding out; it is still one user's app,
with your collections, your Ollama and your files, so it binds to loopback
unless `--allow-remote` is given explicitly, and then says so loudly.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import shlex
import sys

from ragtui.config import Settings
from ragtui.errors import RagtuiError

DEFAULT_PORT = 8000
WARNING = ("ragtui: WARNING: serving on {host}, which is not loopback. The token is the only authentication: anyone "
           "who can reach {url} and sees the token (in the URL, a proxy's log, a shared screen) can use ragtui as "
           "you, with your collections, history and Ollama. Put it behind an authenticating proxy or a firewall.")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="serve the TUI to a web browser (textual-serve; loopback only by default)",
                            description="Serve the terminal UI as a web page through textual-serve, at the URL "
                                        "it prints (with a token that changes at every start). It listens on "
                                        "127.0.0.1 unless --allow-remote is given.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--allow-remote", action="store_true",
                        help="allow a non-loopback --host (anyone who reaches it with the token can use ragtui as you)")
    parser.add_argument("--public-url", metavar="URL",
                        help="the URL browsers use to reach the server (default http://HOST:PORT)")
    parser.set_defaults(run=run)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def app_command(args: argparse.Namespace) -> str:
    """The shell command textual-serve runs per browser tab: this Python, the TUI, the same configuration."""
    argv = [sys.executable, "-m", "ragtui"]
    if args.config is not None:
        argv += ["--config", str(args.config)]
    for flag, value in (("--data-dir", args.data_dir), ("--ollama-host", args.ollama_host), ("--theme", args.theme)):
        if value is not None:
            argv += [flag, str(value)]
    for override in args.set:
        argv += ["--set", override]
    return shlex.join(argv)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if not 0 < args.port < 65536:
        raise RagtuiError(f"--port must be 1-65535, not {args.port}", exit_code=2)
    if args.public_url is not None and not re.fullmatch(r"https?://[^/?#\s]+(/[^?#\s]*)?", args.public_url):
        raise RagtuiError(f"--public-url must be an http:// or https:// URL, not {args.public_url!r}", exit_code=2)
    url = args.public_url or f"http://{f'[{args.host}]' if ':' in args.host else args.host}:{args.port}"
    if not is_loopback(args.host):
        if not args.allow_remote:
            raise RagtuiError(f"--host {args.host} is not a loopback address, and `ragtui serve` has no "
                              "authentication but its token; add --allow-remote if you really mean it", exit_code=2)
        print(WARNING.format(host=args.host, url=url), file=sys.stderr, flush=True)
    from ragtui.serve.guard import Guard, new_token
    from ragtui.serve.server import GuardedServer

    server = GuardedServer(app_command(args), host=args.host, port=args.port, public_url=url,
                           guard=Guard(new_token(), host=args.host, port=args.port, public_url=url),
                           max_sessions=settings.serve.max_sessions)
    server.serve()
    return 0
