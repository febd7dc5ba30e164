"""Tables out of spreadsheets: csv/tsv, xlsx (zip + XML, read with the standard library) and legacy .xls (binary
BIFF, read with xlrd). Each row is one line, its cells joined by " | ", so the chunker can keep a table with its
header row; a workbook's sheets each open with a "## sheet" line. Excel's "save as web page" keeps the .xls name
on an HTML file (`html_export`): extraction reads such a file as the HTML table it is."""

from __future__ import annotations

import csv
import io
import posixpath
import struct
import zipfile
from typing import Any
from xml.etree import ElementTree as ET

from ragtui.config_sections import IngestSettings
from ragtui.ingest.decoding import decode_text
from ragtui.ingest.extracted import Extracted, ExtractError
from ragtui.ingest.office_xml import local_name, office_zip, parse_xml, read_member

HTML_STARTS = (b"<html", b"<table", b"<!doctype html")


def html_export(data: bytes) -> bool:
    """Whether a .xls file is an HTML page or table (a byte-order mark and white space allowed before it)."""
    return data[:4096].removeprefix(b"\xef\xbb\xbf").lstrip()[:16].lower().startswith(HTML_STARTS)


def read_csv(source: str, data: bytes, cfg: IngestSettings) -> Extracted:
    text = decode_text(data)
    if source.lower().endswith(".tsv"):
        dialect: type[csv.Dialect] | csv.Dialect = csv.excel_tab
    else:
        try:
            dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
    rows = csv.reader(io.StringIO(text), dialect)
    return Extracted(source, "\n".join(" | ".join(c.strip() for c in row) for row in rows if any(row)), "csv")


def read_xlsx(source: str, data: bytes, cfg: IngestSettings) -> Extracted:
    zf = office_zip(data, "xlsx", cfg)
    names = set(zf.namelist())
    shared = []
    if "xl/sharedStrings.xml" in names:
        for si in parse_xml(read_member(zf, "xl/sharedStrings.xml", "xlsx"), "xlsx"):
            shared.append("".join(t.text or "" for t in si.iter() if local_name(str(t.tag)) == "t"))
    sheets = _xlsx_sheets(zf, names)
    out = []
    for title, part in sheets:
        out.append(f"## {title}")
        for row in parse_xml(read_member(zf, part, "xlsx"), "xlsx").iter():
            if local_name(str(row.tag)) != "row":
                continue
            cells = [_xlsx_cell(c, shared) for c in row if local_name(str(c.tag)) == "c"]
            if any(cells):
                out.append(" | ".join(cells))
    return Extracted(source, "\n".join(out), "xlsx")


def read_xls(source: str, data: bytes, cfg: IngestSettings) -> Extracted:
    """A legacy Excel workbook, read with xlrd: like xlsx, a "## sheet" line, then a row per line with its
    cells joined by " | "; whole numbers without ".0", dates as ISO dates."""
    import xlrd

    try:
        book = xlrd.open_workbook(file_contents=data, on_demand=True, ragged_rows=True, logfile=io.StringIO())
    except (xlrd.XLRDError, struct.error, AssertionError, IndexError, KeyError, ValueError) as exc:
        raise ExtractError(f"corrupt xls: {exc}") from None
    out = []
    try:
        for index in range(book.nsheets):
            sheet = book.sheet_by_index(index)
            out.append(f"## {sheet.name}")
            for r in range(sheet.nrows):
                cells = [_xls_cell(cell, book.datemode) for cell in sheet.row(r)]
                if any(cells):
                    out.append(" | ".join(cells))
            book.unload_sheet(index)
    except (xlrd.XLRDError, struct.error, AssertionError, IndexError, KeyError, ValueError) as exc:
        raise ExtractError(f"corrupt xls: {exc}") from None
    finally:
        book.release_resources()
    return Extracted(source, "\n".join(out), "xls")


def _xls_cell(cell: Any, datemode: int) -> str:
    import xlrd

    if cell.ctype == xlrd.XL_CELL_NUMBER:
        value = float(cell.value)
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            return xlrd.xldate.xldate_as_datetime(cell.value, datemode).isoformat().removesuffix("T00:00:00")
        except (xlrd.xldate.XLDateError, OverflowError, ValueError):
            return str(cell.value)
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return "TRUE" if cell.value else "FALSE"
    if cell.ctype in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK, xlrd.XL_CELL_ERROR):
        return ""
    return " ".join(str(cell.value).split())


def _xlsx_sheets(zf: zipfile.ZipFile, names: set[str]) -> list[tuple[str, str]]:
    """(sheet title, member path) in workbook order, via workbook.xml and its relationships."""
    try:
        book = parse_xml(zf.read("xl/workbook.xml"), "xlsx")
        rels = parse_xml(zf.read("xl/_rels/workbook.xml.rels"), "xlsx")
    except KeyError:
        return [(n, n) for n in sorted(names) if n.startswith("xl/worksheets/") and n.endswith(".xml")]
    targets = {r.get("Id"): r.get("Target", "") for r in rels}
    out = []
    for sheet in book.iter():
        if local_name(str(sheet.tag)) != "sheet":
            continue
        rid = next((v for k, v in sheet.attrib.items() if local_name(k) == "id"), None)
        target = targets.get(rid, "")
        part = target.lstrip("/") if target.startswith("/") else posixpath.normpath(f"xl/{target}")
        if part in names:
            out.append((sheet.get("name", part), part))
    return out


def _xlsx_cell(cell: ET.Element, shared: list[str]) -> str:
    kind = cell.get("t", "")
    if kind == "inlineStr":
        return "".join(t.text or "" for t in cell.iter() if local_name(str(t.tag)) == "t").strip()
    value = next((v.text or "" for v in cell if local_name(str(v.tag)) == "v"), "")
    if kind == "s" and value.isdigit() and int(value) < len(shared):
        return shared[int(value)].strip()
    return value.strip()
