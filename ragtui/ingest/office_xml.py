"""Office files' parts: a zip opened under the zip-bomb guard, its members read and parsed as XML, every
failure an `ExtractError` naming the format."""

from __future__ import annotations

import io
import zipfile
from xml.etree import ElementTree as ET

from ragtui.config_sections import IngestSettings
from ragtui.ingest.extracted import ExtractError


def check_bomb(zf: zipfile.ZipFile, packed: int, cfg: IngestSettings) -> None:
    total = sum(i.file_size for i in zf.infolist())
    if total > cfg.zip_max_total_mb * 1024 * 1024:
        raise ExtractError(f"zip bomb guard: {total} bytes uncompressed exceeds ingest.zip_max_total_mb")
    if total > max(packed, 1) * cfg.zip_max_ratio:
        raise ExtractError(f"zip bomb guard: compression ratio {total // max(packed, 1)} exceeds "
                           f"ingest.zip_max_ratio ({cfg.zip_max_ratio})")


def office_zip(data: bytes, what: str, cfg: IngestSettings) -> zipfile.ZipFile:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise ExtractError(f"corrupt {what}: {exc}") from None
    check_bomb(zf, len(data), cfg)
    return zf


def read_member(zf: zipfile.ZipFile, name: str, what: str) -> bytes:
    try:
        return zf.read(name)
    except KeyError:
        raise ExtractError(f"corrupt {what}: no {name}") from None
    except (zipfile.BadZipFile, OSError, RuntimeError) as exc:
        raise ExtractError(f"corrupt {what}: {exc}") from None


def parse_xml(data: bytes, what: str) -> ET.Element:
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        raise ExtractError(f"malformed {what}: {exc}") from None


def local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]
