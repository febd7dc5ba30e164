"""`ragtui serve`: the same TUI in a web browser, through textual-serve.

Each browser tab that opens the page starts its own `ragtui` process (the TUI,
with this command's configuration flags) and talks to it over a websocket. There
is no authentication: whoever reaches the port drives ragtui with your
collections, your Ollama and your files. So it binds to loopback unless
`--allow-remote` is given explicitly, and then says so loudly.
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import sys

from ragtui.config import Settings
from ragtui.errors import RagtuiError

DEFAULT_PORT = 8000
WARNING = ("ragtui: WARNING: serving on {host}, which is not loopback. There is no authentication: anyone who "
           "can reach {url} can use ragtui as you, with your collections, history and Ollama. Put it behind an "
           "authenticating proxy or a firewall.")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="serve the TUI to a web browser (textual-serve; loopback only by default)",
                            description="Serve the terminal UI as a web page through textual-serve. There is no "
                                        "authentication: it listens on 127.0.0.1 unless --allow-remote is given.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--allow-remote", action="store_true",
                        help="allow a non-loopback --host (anyone who reaches it can use ragtui: no authentication)")
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
    url = args.public_url or f"http://{args.host}:{args.port}"
    if not is_loopback(args.host):
        if not args.allow_remote:
            raise RagtuiError(f"--host {args.host} is not a loopback address, and `ragtui serve` has no "
                              "authentication; add --allow-remote if you really mean it", exit_code=2)
        print(WARNING.format(host=args.host, url=url), file=sys.stderr, flush=True)
    from textual_serve.server import Server

    server = Server(app_command(args), host=args.host, port=args.port, title="ragtui", public_url=args.public_url)
    server.serve()
    return 0
