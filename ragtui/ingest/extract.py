"""Text out of files, one function per format, with every failure turned into a reason.

Files arrive as bytes (already size-checked and hashed by the caller); nothing is
written anywhere except converter input for zip members, into the caller's work
folder inside the collection. Binary content is never read as text: NUL bytes or
control characters mark it. Office formats are zip + XML, read with the standard
library (python-docx/odfpy/openpyxl would add three dependencies to read the same
XML; their zip and XML parts come from `office_xml`); spreadsheets (csv, xlsx,
legacy .xls) are read by `sheets`. Tables come out as one line per row, cells joined
by " | " (csv, spreadsheets, HTML, ruled PDF tables), so the chunker can keep a table
with its header row. External converters (detex, unrtf, whisper, tesseract) run only
when their binary is configured and present. What a reader yields (`Extracted`,
`Skip`, `ExtractError`) is in `extracted`; bytes are decoded to text by `decoding`.

Text is folded (`ragtui.text.normalize`: ligatures, full-width forms) where it is
made, before any offset is taken, so chunk offsets, the stored text and the keyword
index all see the same characters. A `.gz` file is read as the file it wraps (under
the zip guards' limits); a file with no or an unknown extension is sniffed and read
as plain text when it decodes as text. HTML keeps its main content and its h1-h6
heading paths; a PDF takes heading paths from its outline.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from ragtui import heavy
from ragtui.config_sections import IngestSettings
from ragtui.ingest.decoding import decode, decode_text
from ragtui.ingest.extracted import Extracted, ExtractError, Page, Skip
from ragtui.ingest.html_text import HtmlText, tidy
from ragtui.ingest.office_xml import check_bomb, local_name, office_zip, parse_xml, read_member
from ragtui.ingest.sheets import html_export, read_csv, read_xls, read_xlsx
from ragtui.text import normalize

CONVERTER_TIMEOUT_S = 600
ZIP_MAX_DEPTH = 3

TEXT_FORMATS = {
    "txt": "txt", "text": "txt", "log": "txt", "md": "md", "markdown": "md", "rst": "rst", "org": "txt",
    "py": "code", "js": "code", "ts": "code", "java": "code", "c": "code", "h": "code", "cpp": "code",
    "hpp": "code", "go": "code", "rs": "code", "rb": "code", "sh": "code", "sql": "code", "css": "code",
    "yaml": "code", "yml": "code", "toml": "code", "ini": "code", "cfg": "code",
}
FORMATS = {
    **TEXT_FORMATS, **dict.fromkeys(("mp3", "mp4", "wav", "m4a", "webm", "ogg"), "av"),
    "pdf": "pdf", "html": "html", "htm": "html", "xhtml": "html", "svg": "svg", "docx": "docx", "odt": "odt",
    "csv": "csv", "tsv": "csv", "xlsx": "xlsx", "xls": "xls", "json": "json", "tex": "tex", "rtf": "rtf", "zip": "zip",
}
# format -> (converter name, the IngestSettings key holding its binary)
CONVERTERS = {"tex": ("detex", "detex_bin"), "rtf": ("unrtf", "unrtf_bin"), "av": ("whisper", "whisper_bin")}
# Extensions that are never text, so never sniffed (images, fonts, archives, compiled code, databases).
BINARY_EXTS = frozenset((
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tif", "tiff", "woff", "woff2", "ttf", "otf", "eot",
    "tar", "tgz", "bz2", "xz", "zst", "7z", "rar", "deb", "rpm", "jar", "whl", "so", "o", "a", "dll", "exe",
    "bin", "pyc", "class", "mo", "db", "sqlite", "sqlite3", "pickle", "pkl", "npy", "ps", "dvi", "epub",
    "avi", "mkv", "mov", "flac", "doc", "ppt", "pptx", "odp", "ods",
))
MINIFIED_LINE = 500       # mean line length (chars) above which js/css/json is minified, not prose


def format_of(name: str) -> str:
    """The format key for a file name ("pdf", "md", "code", ...), or "" when unsupported."""
    return FORMATS.get(_ext(name), "")


def _ext(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[-1].lower() if "." in base.strip(".") else ""


def unsupported_reason(name: str) -> str:
    ext = _ext(name)
    if ext in ("doc", "ppt"):
        return f"unsupported format: .{ext} (legacy Office binary; save as .{ext}x)"
    return f"unsupported format: .{ext}" if ext else "unsupported format: no file extension"


def sniffable(name: str) -> bool:
    """No known format, but possibly plain text: no extension, or one that names no binary format."""
    return not format_of(name) and _ext(name) not in BINARY_EXTS


def extract(source: str, data: bytes, cfg: IngestSettings, workdir: Path, path: Path | None = None,
            depth: int = 0) -> list[Extracted | Skip]:
    """The documents in one file: usually one, several for a zip; failures come back as Skip.

    `name` decides the format: the source itself, or for "x.md.gz" the wrapped "x.md".
    """
    name = source
    if _ext(source) == "gz":
        name = source[:-3]
        if not (format_of(name) or sniffable(name)):
            return [Skip(source, unsupported_reason(name) + " (inside .gz)")]
        path = None
    fmt = format_of(name) or ("sniff" if sniffable(name) else "")
    if not fmt:
        return [Skip(source, unsupported_reason(source))]
    if not data:
        return [Skip(source, "empty file")]
    try:
        if name != source:
            data = _gunzip(data, cfg)
        if fmt == "xls" and html_export(data):
            fmt = "html"
        if fmt == "zip":
            return _zip(source, data, cfg, workdir, depth)
        if fmt in CONVERTERS:
            return [_converted(source, data, fmt, cfg, workdir, path)]
        doc = _HANDLERS[fmt](source, data, cfg)
    except ExtractError as exc:
        return [Skip(source, str(exc))]
    except Exception as exc:  # a parser's own error on malformed input (csv.Error, BadZipFile, ...): skip the file
        return [Skip(source, f"unreadable {fmt}: {type(exc).__name__}: {exc}")]
    if fmt in ("code", "json") and _ext(name) in ("js", "css", "json", "map") and _minified(doc.text):
        return [Skip(source, "minified js/css/json (generated, not prose)")]
    if not doc.pages and not doc.headings:      # formats whose handler took no offsets fold here
        doc.text = normalize(doc.text)
    return [doc]


def _gunzip(data: bytes, cfg: IngestSettings) -> bytes:
    """The wrapped file's bytes, refused past the zip guards (total size, compression ratio)."""
    limit = min(cfg.zip_max_total_mb * 1024 * 1024, max(len(data), 1) * cfg.zip_max_ratio)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise ExtractError(f"corrupt gzip: {exc}") from None
    if len(out) > limit:
        raise ExtractError(f"zip bomb guard: gzip expands past ingest.zip_max_ratio ({cfg.zip_max_ratio}) "
                           f"or ingest.zip_max_total_mb ({cfg.zip_max_total_mb})")
    return out


def _minified(text: str) -> bool:
    lines = text.count("\n") + 1
    return len(text) > 2 * MINIFIED_LINE and len(text) / lines > MINIFIED_LINE


# --- text-like ----------------------------------------------------------------------

def _text(source: str, data: bytes, cfg: IngestSettings) -> Extracted:
    text, encoding = decode(data)
    return Extracted(source, text, format_of(source.removesuffix(".gz")), encoding=encoding)


def _sniffed(source: str, data: bytes, cfg: IngestSettings) -> Extracted:
    """A file of no known format, read as plain text when it decodes as text."""
    try:
        text, encoding = decode(data)
    except ExtractError as exc:
        raise ExtractError(f"{unsupported_reason(source.removesuffix('.gz'))}, and not text: {exc}") from None
    return Extracted(source, text, "txt", encoding=encoding)


def _json(source: str, data: bytes, cfg: IngestSettings) -> Extracted:
    try:
        value = json.loads(decode_text(data))
    except json.JSONDecodeError as exc:
        raise ExtractError(f"invalid JSON: {exc}") from None
    return Extracted(source, json.dumps(value, indent=2, ensure_ascii=False), "json")


def _html(source: str, data: bytes, cfg: IngestSettings) -> Extracted:
    text, encoding = decode(data)
    parser = HtmlText()
    parser.feed(text)
    parser.close()
    body, headings = parser.main_text()
    return Extracted(source, body, "html", headings=headings, encoding=encoding)


def _svg(source: str, data: bytes, cfg: IngestSettings) -> Extracted:
    root = parse_xml(data, "SVG")
    parts = []
    for el in root.iter():
        if local_name(str(el.tag)) in ("style", "script"):
            continue
        if el.text and el.text.strip():
            parts.append(el.text.strip())
    return Extracted(source, "\n".join(parts), "svg")


# --- office (zip + XML) -------------------------------------------------------------------

def _docx(source: str, data: bytes, cfg: IngestSettings) -> Extracted:
    root = parse_xml(read_member(office_zip(data, "docx", cfg), "word/document.xml", "docx"), "docx")
    paragraphs = []
    for p in root.iter():
        if local_name(str(p.tag)) != "p":
            continue
        bits = []
        for el in p.iter():
            tag = local_name(str(el.tag))
            if tag == "t" and el.text:
                bits.append(el.text)
            elif tag == "tab":
                bits.append("\t")
            elif tag in ("br", "cr"):
                bits.append("\n")
        paragraphs.append("".join(bits))
    return Extracted(source, tidy("\n".join(paragraphs)), "docx")


def _odt(source: str, data: bytes, cfg: IngestSettings) -> Extracted:
    root = parse_xml(read_member(office_zip(data, "odt", cfg), "content.xml", "odt"), "odt")
    paragraphs = ["".join(el.itertext()) for el in root.iter() if local_name(str(el.tag)) in ("p", "h")]
    return Extracted(source, tidy("\n".join(paragraphs)), "odt")


# --- PDF -------------------------------------------------------------------------------------

def _pdf(source: str, data: bytes, cfg: IngestSettings) -> Extracted:
    """Text per page with its printed label; pages joined, each page's start offset kept; heading
    paths from the outline (bookmarks)."""
    heavy.load("pymupdf")
    import pymupdf

    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except RuntimeError as exc:
        raise ExtractError(f"corrupt PDF: {exc}") from None
    with doc:
        if doc.needs_pass:
            raise ExtractError("encrypted PDF: a password is required")
        parts: list[str] = []
        pages: list[Page] = []
        offset = 0
        try:
            for page in doc.pages():
                text = _page_text(page)
                if not text.strip() and cfg.tesseract_bin:
                    text = _ocr(page, cfg.tesseract_bin)
                text = normalize(text.replace("\r\n", "\n"))
                if text and not text.endswith("\n"):
                    text += "\n"
                pages.append(Page(offset, page.get_label() or str(page.number + 1), page.number))
                parts.append(text)
                offset += len(text)
            toc = doc.get_toc(simple=True)
        except (RuntimeError, ValueError) as exc:
            raise ExtractError(f"corrupt PDF: {exc}") from None
    text = "".join(parts)
    if not text.strip():
        hint = "" if cfg.tesseract_bin else "; set ingest.tesseract_bin for OCR"
        raise ExtractError(f"no text layer in PDF (scanned?){hint}")
    return Extracted(source, text, "pdf", kind="pdf", pages=pages, headings=outline_headings(toc, text, pages))


def _page_text(page: Any) -> str:
    """The page's text, with each ruled table that PyMuPDF's `find_tables` finds as one line per row,
    cells joined by " | ", in place of its cells' loose lines. Only pages whose lines make a grid are
    searched, only where those lines are (the finder reads every character of the area it searches), and
    without the layout model (seconds a page)."""
    plain = str(page.get_text("text"))
    area = _ruled_area(page)
    if area is None:
        return plain
    os.environ.setdefault("PYMUPDF_SUGGEST_LAYOUT_ANALYZER", "0")   # its advice would print to our terminal
    try:
        try:
            tables = list(page.find_tables(clip=area, use_layout=False).tables)
        except TypeError:                  # PyMuPDF before the layout model has no use_layout
            tables = list(page.find_tables(clip=area).tables)
    except (RuntimeError, ValueError, IndexError, ZeroDivisionError):
        return plain                       # the finder failing on an odd page leaves its plain text
    if not tables:
        return plain
    boxes = [tuple(t.bbox) for t in tables]
    words = page.get_text("words")
    out: list[str] = []
    placed: set[int] = set()
    for x0, y0, x1, y1, text, _, kind in page.get_text("blocks"):
        if kind != 0:
            continue
        k = _box_of((x0 + x1) / 2, (y0 + y1) / 2, boxes)
        if k < 0:
            out.append(text if text.endswith("\n") else text + "\n")
        elif k not in placed:
            placed.add(k)
            out.append(_table_rows(tables[k], words))
    out.extend(_table_rows(t, words) for k, t in enumerate(tables) if k not in placed)
    return "".join(out)


def _ruled_area(page: Any) -> tuple[float, float, float, float] | None:
    """The box around the page's straight lines and rectangles when they make a grid (at least three
    places across and three down: a frame around a code listing has two), else None."""
    across: set[int] = set()
    down: set[int] = set()
    x0 = y0 = float("inf")
    x1 = y1 = float("-inf")
    for path in page.get_cdrawings():
        for item in path.get("items", ()):
            if item[0] == "l":
                (ax, ay), (bx, by) = item[1], item[2]
                if abs(ay - by) < 1 < abs(ax - bx):
                    across.add(round(ay))
                elif abs(ax - bx) < 1 < abs(ay - by):
                    down.add(round(ax))
            elif item[0] == "re":
                ax, ay, bx, by = item[1]
                across.update((round(ay), round(by)))
                down.update((round(ax), round(bx)))
            else:
                continue
            x0, y0, x1, y1 = min(x0, ax, bx), min(y0, ay, by), max(x1, ax, bx), max(y1, ay, by)
    return (x0 - 1, y0 - 1, x1 + 1, y1 + 1) if len(across) >= 3 and len(down) >= 3 else None


def _box_of(x: float, y: float, boxes: list[tuple[float, float, float, float]]) -> int:
    """Index of the box holding the point, or -1."""
    return next((i for i, (a, b, c, d) in enumerate(boxes) if a <= x <= c and b <= y <= d), -1)


def _table_rows(table: Any, words: list[Any]) -> str:
    """A found table's rows, each cell's words in reading order (the table's own extract drops the spaces
    between a cell's words)."""
    rows = []
    for row in table.rows:
        cells = [tuple(cell) if cell else None for cell in row.cells]
        texts: list[list[str]] = [[] for _ in cells]
        for x0, y0, x1, y1, word, *_ in words:
            k = _box_of((x0 + x1) / 2, (y0 + y1) / 2, [c or (0.0, 0.0, -1.0, -1.0) for c in cells])
            if k >= 0:
                texts[k].append(word)
        line = " | ".join(" ".join(t) for t in texts)
        if any(texts):
            rows.append(line + "\n")
    return "".join(rows)


def outline_headings(toc: list[list[Any]], text: str, pages: list[Page]) -> list[tuple[int, str]]:
    """(offset, heading path) for each outline entry [level, title, page (1-based)].

    The offset is where the title appears on its target page (matched with any run of
    whitespace between its words, ignoring case), else that page's start; entries
    pointing nowhere are skipped. Offsets never go backwards, so a path is always in force.
    """
    out: list[tuple[int, str]] = []
    path: list[tuple[int, str]] = []
    floor = 0
    for entry in toc:
        level, title, number = int(entry[0]), normalize(" ".join(str(entry[1]).split())), int(entry[2])
        if not title or not 1 <= number <= len(pages):
            continue
        start = pages[number - 1].start
        end = pages[number].start if number < len(pages) else len(text)
        words = [re.escape(w) for w in title.split()]
        m = re.compile(r"\s+".join(words), re.I).search(text, max(start, floor), end) if words else None
        at = m.start() if m else max(start, floor)
        path = [(lv, t) for lv, t in path if lv < level] + [(level, title)]
        out.append((at, " > ".join(t for _, t in path)))
        floor = at
    return out


def _ocr(page: Any, tesseract: str) -> str:
    binary = shutil.which(tesseract)
    if not binary:
        raise ExtractError(f"OCR needed but tesseract not found at {tesseract!r} (ingest.tesseract_bin)")
    png = page.get_pixmap(dpi=200).tobytes("png")
    return _run([binary, "stdin", "stdout"], "tesseract", stdin=png)


# --- external converters ---------------------------------------------------------------

def _run(cmd: list[str], name: str, stdin: bytes | None = None) -> str:
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, timeout=CONVERTER_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExtractError(f"{name} failed: {exc}") from None
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ExtractError(f"{name} failed (exit {proc.returncode}): {detail[-1] if detail else 'no message'}")
    return proc.stdout.decode("utf-8", "replace")


def _converted(source: str, data: bytes, fmt: str, cfg: IngestSettings, workdir: Path,
               path: Path | None) -> Extracted:
    name, key = CONVERTERS[fmt]
    configured = getattr(cfg, key)
    binary = shutil.which(configured) if configured else None
    if not binary:
        what = "audio/video" if fmt == "av" else f".{fmt}"
        raise ExtractError(f"no converter for {what}: {name} not found (set ingest.{key})")
    if fmt == "av" and not cfg.whisper_model:
        raise ExtractError("no converter for audio/video: ingest.whisper_model is not set")
    if path is None:
        workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir) if path is None else nullcontext("") as tmp:
        if path is None:
            path = Path(tmp) / Path(source).name
            path.write_bytes(data)
        args = {"tex": [str(path)], "rtf": ["--text", str(path)],
                "av": ["-m", cfg.whisper_model, "-f", str(path), "-nt", "-np"]}[fmt]
        text = _run([binary, *args], name)
    if fmt == "rtf":
        text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("###") and set(ln) != {"-"})
    text = text.strip()
    if not text:
        raise ExtractError(f"{name} produced no text")
    return Extracted(source, text + "\n", fmt, kind="av" if fmt == "av" else "text")


# --- zip -----------------------------------------------------------------------------------

def archive_of(source: str) -> str:
    """The archive file a document's name names it a member of ("a.zip" of "a.zip/m.txt" and of
    "a.zip/b.zip/m.txt", as `_zip` names members), "" for a file's own name."""
    parts = source.split("/")
    outer = min((k for k in range(1, len(parts)) if parts[k - 1].lower().endswith(".zip")), default=0)
    return "/".join(parts[:outer])


def unsafe_member(name: str) -> bool:
    """A member name that would escape the folder it is unpacked into (zip-slip)."""
    norm = name.replace("\\", "/")
    return norm.startswith("/") or re.match(r"^[A-Za-z]:", norm) is not None or ".." in norm.split("/")


def _zip(source: str, data: bytes, cfg: IngestSettings, workdir: Path, depth: int) -> list[Extracted | Skip]:
    """Members ingested recursively, in memory; unsafe names and bombs are refused with a reason."""
    if depth >= ZIP_MAX_DEPTH:
        return [Skip(source, f"zip nested deeper than {ZIP_MAX_DEPTH} levels")]
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        check_bomb(zf, len(data), cfg)
    except zipfile.BadZipFile as exc:
        return [Skip(source, f"corrupt zip: {exc}")]
    except ExtractError as exc:
        return [Skip(source, str(exc))]
    out: list[Extracted | Skip] = []
    with zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            member = f"{source}/{info.filename}"
            if unsafe_member(info.filename):
                out.append(Skip(member, "unsafe path in zip (zip-slip): refused"))
                continue
            if info.flag_bits & 0x1:
                out.append(Skip(member, "encrypted zip member"))
                continue
            if not format_of(info.filename):
                out.append(Skip(member, unsupported_reason(info.filename)))
                continue
            try:
                with zf.open(info) as f:
                    body = f.read(info.file_size + 1)
            except (zipfile.BadZipFile, OSError, RuntimeError, EOFError) as exc:
                out.append(Skip(member, f"corrupt zip member: {exc}"))
                continue
            if len(body) > info.file_size:
                out.append(Skip(member, "zip bomb guard: member larger than declared"))
                continue
            out.extend(extract(member, body, cfg, workdir, None, depth + 1))
    return out


_HANDLERS: dict[str, Callable[[str, bytes, IngestSettings], Extracted]] = {
    "sniff": _sniffed, "txt": _text, "md": _text, "rst": _text, "code": _text, "json": _json, "csv": read_csv,
    "html": _html, "svg": _svg, "docx": _docx, "odt": _odt, "xlsx": read_xlsx, "xls": read_xls, "pdf": _pdf,
}
