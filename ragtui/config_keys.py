"""The rule of the `[keys]` table: each entry read as key names, and the table as a whole (no key the panes keep,
no key for two actions). `config` applies it when the settings load, so `ragtui config show` and the TUI's
start refuse the same tables; `tui/keymap.py` binds what it returns.

Keys are named as Textual names them (a letter or digit as itself, any other character by its Unicode name in
lower case with "_" for spaces and hyphens, six of them shortened: textual/keys.py, `_character_to_key` and
`KEY_NAME_REPLACEMENTS`), so the names bind as they are; tests/tui/test_keymap.py holds the two namings equal.
"""

from __future__ import annotations

import dataclasses
import string
import unicodedata
from collections.abc import Mapping

from ragtui.config_sections import KeysSettings

# Textual's short names for six characters whose Unicode names are long (textual/keys.py KEY_NAME_REPLACEMENTS).
_SHORT_NAMES = {"solidus": "slash", "reverse_solidus": "backslash", "commercial_at": "at", "hyphen_minus": "minus",
                "plus_sign": "plus", "low_line": "underscore"}
TAKEN_KEYS = frozenset({"tab", "shift+tab", "enter", "space", "up", "down", "left", "right", "pageup", "pagedown",
                        "home", "end", "ctrl+p", "ctrl+c", "j", "k", "g", "G", "ctrl+d", "ctrl+u", "d", "K"})
MODIFIERS = ("ctrl", "alt", "shift", "super")
KEY_ALIASES = {"esc": "escape", "return": "enter", "del": "delete", "pgup": "pageup", "pgdn": "pagedown"}

KeyTable = Mapping[str, tuple[str, ...]]    # an action's id -> its keys, as Textual names them


def key_name(character: str) -> str:
    """The name Textual gives the key that types `character`."""
    if character.isalnum():
        return character
    try:
        name = unicodedata.name(character).lower().replace("-", "_").replace(" ", "_")
    except ValueError:
        return character
    return _SHORT_NAMES.get(name, name)


NAMED_KEYS = frozenset({"escape", "enter", "tab", "space", "backspace", "delete", "insert", "home", "end", "pageup",
                        "pagedown", "up", "down", "left", "right", *(f"f{n}" for n in range(1, 25)),
                        *(key_name(c) for c in string.punctuation)})


def parse_keys(text: str) -> tuple[str, ...]:
    """A [keys] value ("?", "ctrl+k", "f2", "x, ctrl+x") as Textual's key names; ValueError says what is wrong."""
    keys = []
    for spelled in text.split(","):
        spelled = spelled.strip()
        if not spelled:
            raise ValueError("expected one key or several separated by commas, e.g. \"?\" or \"f1, ctrl+k\"")
        if spelled.endswith("++"):                           # "ctrl++": the plus key with ctrl
            modifiers, base = spelled[:-2].split("+"), "+"
        else:
            *modifiers, base = spelled.split("+") if len(spelled) > 1 else [spelled]
        if not base:
            raise ValueError(f"{spelled!r}: a modifier without a key")
        unknown = [m for m in modifiers if m.lower() not in MODIFIERS]
        if unknown:
            raise ValueError(f"{spelled!r}: unknown modifier {unknown[0]!r} (known: {', '.join(MODIFIERS)})")
        if len(base) == 1:
            if not base.isprintable() or base.isspace():
                raise ValueError(f"{spelled!r}: not a key (write space as \"space\")")
            name = key_name(base.lower() if modifiers else base)
        else:
            name = KEY_ALIASES.get(base.lower(), base.lower())
            if name not in NAMED_KEYS:
                raise ValueError(f"{spelled!r}: unknown key {base!r} (a character, a function key f1-f24, or "
                                 "escape, enter, tab, space, backspace, delete, insert, home, end, pageup, "
                                 "pagedown, up, down, left, right)")
        keys.append("+".join([*(m.lower() for m in modifiers), name]))
    return tuple(dict.fromkeys(keys))


def check_keys(keys: KeysSettings, origins: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Every action's keys (by its [keys] entry); ValueError with the whole message for a bad key, a key the panes
    keep for themselves (TAKEN_KEYS) or one key given to two actions, naming the entries and where they were set."""
    table: dict[str, tuple[str, ...]] = {}
    owner: dict[str, tuple[str, str]] = {}             # key name -> (entry, the key as that entry spelled it)
    for entry in (f.name for f in dataclasses.fields(KeysSettings)):
        spelled = getattr(keys, entry)
        where = origins.get(f"keys.{entry}", "default (config.toml)")
        try:
            parsed = parse_keys(spelled)
        except ValueError as exc:
            raise ValueError(f"config error: keys.{entry} = {spelled!r} (from {where}): {exc}") from None
        for key, written in zip(parsed, _spellings(spelled, parsed), strict=True):
            if key in TAKEN_KEYS:
                raise ValueError(f"config error: keys.{entry} = {spelled!r} (from {where}): {written} is kept by "
                                 "the lists and panes (tab, enter, arrows, j k g G, ctrl+d ctrl+u, ctrl+p); choose "
                                 "another key")
            if key in owner:
                other, theirs = owner[key]
                raise ValueError(f"config error: keys.{other} and keys.{entry} both use {theirs} (from "
                                 f"{origins.get(f'keys.{other}', 'default (config.toml)')} and {where}); give one "
                                 "of them another key")
            owner[key] = (entry, written)
        table[entry] = parsed
    return table


def _spellings(text: str, parsed: tuple[str, ...]) -> list[str]:
    """Each parsed key as the entry wrote it (its first spelling), for messages."""
    first: dict[str, str] = {}
    for spelled in text.split(","):
        first.setdefault(parse_keys(spelled.strip())[0], spelled.strip())
    return [first[key] for key in parsed]
