"""The served page, with no request to any other host.

textual-serve's page template links a stylesheet on fonts.googleapis.com for its Roboto Mono, which
would tell Google (and anyone on the path) that ragtui is in use, and from where. ragtui contacts
nothing but the servers it is configured for, so `own_origin_only` drops every `<link>` and
`<script>` that points at another origin and declares the font from the copy textual-serve itself
ships under static/fonts (when that copy is absent, the terminal's font list ends in the browser's
monospace). `content_security_policy` then has the browser refuse any other origin as well, should
a later template or script ask for one.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

FONT_FILE = "fonts/RobotoMono-VariableFont_wght.ttf"      # in textual-serve's static folder
_TAG = re.compile(r"<(?:link|script)\b[^>]*>(?:\s*</script>)?", re.IGNORECASE)
_REFERENCE = re.compile(r"""\b(?:href|src)\s*=\s*["']?([^"'\s>]+)""", re.IGNORECASE)


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of an absolute URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def own_origin_only(html: str, origin: str, static_url: str, static_path: Path) -> str:
    """The page without links and scripts to another origin, and with the font from the static folder."""

    def keep_own(tag: re.Match[str]) -> str:
        reference = _REFERENCE.search(tag.group(0))
        if reference is None or not urlsplit(reference.group(1)).netloc:
            return tag.group(0)
        return tag.group(0) if origin_of(reference.group(1)) == origin else ""

    html = _TAG.sub(keep_own, html)
    if (static_path / FONT_FILE).is_file():
        face = ("<style>@font-face { font-family: 'Roboto Mono'; "
                f"src: url('{static_url}{FONT_FILE}') format('truetype'); }}</style>\n")
        html = html.replace("</head>", face + "</head>", 1)
    return html


def content_security_policy(origin: str) -> str:
    """Scripts, styles, fonts, images and connections from the page's own origin (and its WebSocket) only."""
    socket = ("wss" if origin.startswith("https:") else "ws") + origin[origin.index(":"):]
    own = f"'self' {origin}"
    return "; ".join([
        "default-src 'none'",
        f"script-src {own} 'unsafe-inline'",     # the template's inline Start/Restart handler
        f"style-src {own} 'unsafe-inline'",      # the template's and xterm's inline styles
        f"font-src {own}",
        f"img-src {own} data:",
        f"connect-src {own} {socket}",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'none'",
    ])
