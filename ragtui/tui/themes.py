"""Themes are data files: TOML tables of textual.theme.Theme fields, shipped in themes/ and added by users.

A file that cannot be read or does not describe a valid theme is reported in one
line and skipped, so a typo in a user theme never stops the app.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

from textual.theme import Theme

DEFAULT_THEME = "ragtui-dark"
_FIELDS = {f.name for f in dataclasses.fields(Theme)}
# Theme does not check its fields' types, and a wrong one (name = 5) crashes the app later, far from the file;
# so each key's TOML type is checked here, read off Theme's own annotations ("str | None" -> str).
_TOML_TYPES: dict[str, tuple[type, ...]] = {"str": (str,), "bool": (bool,), "float": (int, float), "dict": (dict,)}
_EXPECTED = {f.name: str(f.type).split(" |")[0].split("[")[0] for f in dataclasses.fields(Theme)}


def shipped_themes_dir() -> Path:
    """themes/ inside the wheel (force-included as ragtui/themes) or at the top of a source checkout."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "themes"
    return packaged if packaged.is_dir() else package.parent / "themes"


def user_themes_dir() -> Path:
    from ragtui.config import user_config_path

    return user_config_path().parent / "themes"


def parse_theme(path: Path) -> Theme:
    """One theme file -> Theme; ValueError with the reason when it is not usable."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read it ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML ({exc})") from None
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r}; allowed: {', '.join(sorted(_FIELDS))}")
    for key, value in data.items():
        expected = _EXPECTED[key]
        is_bool_as_number = expected == "float" and isinstance(value, bool)
        if not isinstance(value, _TOML_TYPES.get(expected, (object,))) or is_bool_as_number:
            raise ValueError(f"key {key!r} must be a {'number' if expected == 'float' else expected}, "
                             f"not {type(value).__name__}")
    data.setdefault("name", path.stem)
    if "primary" not in data:
        raise ValueError("missing the required key 'primary'")
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(isinstance(v, str) for v in variables.values()):
        raise ValueError("[variables] must map names to strings")
    try:
        theme = Theme(**data)
        theme.to_color_system().generate()
    except Exception as exc:  # Theme/Color raise assorted errors for bad colour strings
        raise ValueError(f"invalid value ({exc})") from None
    return theme


def load_themes(directories: list[Path]) -> tuple[list[Theme], list[str]]:
    """Every *.toml theme in the directories (later ones override earlier names), plus one error line per bad file."""
    themes: dict[str, Theme] = {}
    errors: list[str] = []
    for directory in directories:
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.toml")):
            try:
                theme = parse_theme(path)
            except ValueError as exc:
                errors.append(f"theme file {path}: {exc}; skipped")
                continue
            themes[theme.name] = theme
    return list(themes.values()), errors
