"""`ragtui page [--session ID] N -o FILE.png`: the PDF page that source [N] of a saved session lies on, as a PNG
with the chunk's text and the annotation's quote boxed (ragtui.page_render); `--open` shows it in the system's
image viewer."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ragtui.cli.arg_types import positive, record_id
from ragtui.config import Settings
from ragtui.errors import RagtuiError
from ragtui.paths import user_path
from ragtui.sanitize import one_line


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("page", help="write the PDF page a source cites as a PNG, its chunk and quote boxed",
                            description="Draw the PDF page that source [N] of a saved session lies on, with the "
                                        "chunk's text boxed in blue and the annotation's quote in red, and write "
                                        "it as a PNG.")
    parser.add_argument("number", type=record_id, metavar="N", help="the source's [N]")
    parser.add_argument("--session", type=record_id, metavar="ID", help="which session (default: the latest)")
    parser.add_argument("-o", "--output", type=user_path, metavar="FILE.png", required=True,
                        help="the PNG to write")
    parser.add_argument("--page", type=positive, default=1, metavar="K",
                        help="for a chunk that runs over pages: its Kth page (default 1, the first)")
    parser.add_argument("--open", action="store_true", help="open the PNG with the system's image viewer")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.cli.ask_cmd import latest_session
    from ragtui.page_render import page_parts, render_part
    from ragtui.workspace import Workspace

    with Workspace(settings) as workspace:
        session_id = args.session or latest_session(workspace.history)
        session = workspace.reopen(session_id)
        try:
            source = session.source(args.number)
        except KeyError as exc:
            raise RagtuiError(f"session {session_id}: {exc.args[0]}", exit_code=2) from None
        pdf = workspace.source_pdf(source.chunk)
        parts = page_parts(source.chunk)
        if args.page > len(parts):
            raise RagtuiError(f"[{args.number}] lies on {_count(len(parts))}: --page goes from 1 to {len(parts)}",
                              exit_code=2)
        part = parts[args.page - 1]
        page = render_part(pdf, part, source.quote)
    try:
        args.output.write_bytes(page.png)
    except (OSError, ValueError) as exc:      # a folder, no permission, a name no file can have
        raise RagtuiError(f"cannot write {args.output}: {getattr(exc, 'strerror', None) or exc}",
                          exit_code=2) from None
    where = args.output.resolve()
    print(one_line(f"wrote page {part.label} of [{args.number}] {source.chunk.label} (session {session_id}) to "
                   f"{where}: {page.width}x{page.height} pixels, the chunk boxed in blue, the quote in red"))
    if len(parts) > 1:
        others = ", ".join(f"--page {k} for page {p.label}" for k, p in enumerate(parts, 1) if p is not part)
        print(one_line(f"the chunk lies on {_count(len(parts))}; this is page {args.page} of them ({others})"))
    for note in page.notes:
        if note.startswith("the quote") and source.quote_page and source.quote_page != part.label:
            k = next((k for k, p in enumerate(parts, 1) if p.label == source.quote_page), 0)
            note = f"the quote is on page {source.quote_page}" + (f" (--page {k})" if k else "")
        print(one_line(f"ragtui: {note}"), file=sys.stderr)
    if args.open:
        _open(where)
    return 0


def _count(pages: int) -> str:
    return "1 page" if pages == 1 else f"{pages} pages"


def _open(path: Path) -> None:
    """Hand the file to the system's viewer (`open` on macOS, `xdg-open` elsewhere), without waiting for it; say
    why not where it cannot show anything here."""
    if os.environ.get("SSH_CONNECTION") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        print(one_line(f"ragtui: not opened: this is an SSH session without a display; copy {path} to your "
                       "machine (scp) to see it"), file=sys.stderr)
        return
    opener = shutil.which("open" if sys.platform == "darwin" else "xdg-open")
    if opener is None:
        print(one_line(f"ragtui: not opened: no {'open' if sys.platform == 'darwin' else 'xdg-open'} on PATH; "
                       f"the PNG is at {path}"), file=sys.stderr)
        return
    try:
        subprocess.Popen([opener, str(path)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        print(one_line(f"ragtui: not opened: {opener}: {exc.strerror or exc}"), file=sys.stderr)
        return
    print(one_line(f"handed it to {Path(opener).name}"))
