"""Typed settings, layered: shipped config.toml < user file < RAGTUI_* env < CLI --set.

The shipped `config.toml` is the only place defaults live; the section dataclasses
(`ragtui.config_sections`) only say what type and range each key accepts, so the two
cannot drift apart. This module layers the values, checks each against its key's rule
and the rules that involve several keys, and builds the `Settings`. Every value
remembers where it came from, for `ragtui config show` and for error messages that
point at the right file or variable.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtui.config_keys import check_keys
from ragtui.config_sections import (
    REGEX_FLAGS,
    AnnotationSettings,
    ChromaSettings,
    ChunkSettings,
    CiteSettings,
    EmbedSettings,
    IngestSettings,
    KeysSettings,
    KeywordSettings,
    LimitsSettings,
    LlmSettings,
    OllamaSettings,
    RerankSettings,
    ResearchSettings,
    RetrieveSettings,
    Secret,
    ServeSettings,
    StorageSettings,
    StrategySettings,
    SynonymSettings,
    UiSettings,
)
from ragtui.errors import RagtuiError
from ragtui.paths import user_path

ENV_PREFIX = "RAGTUI_"


class ConfigError(RagtuiError):
    """A configuration value that cannot be used; the message names key, value and origin."""

    exit_code = 2


SECTIONS: dict[str, type] = {
    "chunk": ChunkSettings,
    "ingest": IngestSettings,
    "embed": EmbedSettings,
    "retrieve": RetrieveSettings,
    "strategies": StrategySettings,
    "rerank": RerankSettings,
    "keyword": KeywordSettings,
    "synonyms": SynonymSettings,
    "llm": LlmSettings,
    "annotation": AnnotationSettings,
    "ollama": OllamaSettings,
    "limits": LimitsSettings,
    "chroma": ChromaSettings,
    "storage": StorageSettings,
    "ui": UiSettings,
    "keys": KeysSettings,
    "serve": ServeSettings,
    "cite": CiteSettings,
    "research": ResearchSettings,
}

# Keys that moved, old "section.key" -> new: still read from files, RAGTUI_* variables and --set, with one
# notice line naming the new spelling. Where both spellings are set in the same layer, the new one wins.
RENAMED: dict[str, str] = {
    "fts.enabled": "keyword.enabled",
    "fts.weight": "retrieve.keyword_weight",
    "fts.min_query_ic": "keyword.min_query_ic",
    "fts.long_query_threshold": "keyword.long_query_threshold",
    "fts.bm25_k1": "keyword.bm25_k1",
    "fts.bm25_b": "keyword.bm25_b",
}
_RENAMED_SECTIONS = {old.split(".")[0] for old in RENAMED}


@dataclass(frozen=True)
class Settings:
    chunk: ChunkSettings
    ingest: IngestSettings
    embed: EmbedSettings
    retrieve: RetrieveSettings
    strategies: StrategySettings
    rerank: RerankSettings
    keyword: KeywordSettings
    synonyms: SynonymSettings
    llm: LlmSettings
    annotation: AnnotationSettings
    ollama: OllamaSettings
    limits: LimitsSettings
    chroma: ChromaSettings
    storage: StorageSettings
    ui: UiSettings
    keys: KeysSettings
    serve: ServeSettings
    cite: CiteSettings
    research: ResearchSettings
    origins: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    # lines for the user about the configuration itself (deprecated names read), printed once by the CLI
    notices: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def data_dir(self) -> Path:
        if self.storage.data_dir:
            return user_path(self.storage.data_dir)
        from platformdirs import user_data_path

        return user_data_path("ragtui", appauthor=False)

    @property
    def embed_server(self) -> tuple[str, Secret]:
        """Where embed.provider = "openai" embeds and the key it sends: embed.base_url, else llm.base_url when the
        LLM is served the OpenAI way; embed.api_key, else llm.api_key, but only to the LLM's own server (a key is
        never sent to another server)."""
        llm_url = self.llm.base_url if self.llm.provider == "openai" else ""
        url = self.embed.base_url or llm_url
        same = url.rstrip("/") == self.llm.base_url.rstrip("/")
        return url, self.embed.api_key or (self.llm.api_key if same else Secret())

    def flat(self) -> dict[str, Any]:
        """Every key as "section.key" -> value, in schema order; a secret as "***" (or "" when unset)."""
        return {
            f"{s}.{f.name}": _shown(getattr(getattr(self, s), f.name))
            for s, cls in SECTIONS.items()
            for f in dataclasses.fields(cls)
        }

    def replace(self, **changes: Any) -> Settings:
        """A copy with "section.key"-style changes (keyword `section__key`), validated."""
        values = {k: {f.name: getattr(getattr(self, k), f.name) for f in dataclasses.fields(c)}
                  for k, c in SECTIONS.items()}
        origins = dict(self.origins)
        for dunder, value in changes.items():
            section, key = dunder.split("__", 1)
            dotted = f"{section}.{key}"
            values[section][key] = _coerce(dotted, value, "code", section, key)
            origins[dotted] = "code"
        return _build(values, origins, self.notices)


def _shown(value: Any) -> Any:
    return str(value) if isinstance(value, Secret) else value


def shipped_config_path() -> Path:
    """The shipped config.toml: inside the wheel, or at the top of a source checkout."""
    here = Path(__file__).resolve().parent
    packaged = here / "default_config.toml"
    return packaged if packaged.exists() else here.parent / "config.toml"


def user_config_path() -> Path:
    from platformdirs import user_config_path as ucp

    return ucp("ragtui", appauthor=False) / "config.toml"


def load_settings(
    user_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Sequence[str] = (),
    required: bool = False,
) -> Settings:
    """Build the effective settings; raises ConfigError naming the first bad key.

    `required`: `user_file` was named by the user (`--config`), so its absence is an error; the
    default user file may be absent.
    """
    env = os.environ if env is None else env
    values: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}
    origins: dict[str, str] = {}
    renamed: list[str] = []

    shipped = shipped_config_path()
    _apply_file(shipped, values, origins, "default", renamed)
    for section, cls in SECTIONS.items():
        for f in dataclasses.fields(cls):
            if f.name not in values[section]:
                raise ConfigError(f"{section}.{f.name}: missing from the shipped defaults {shipped}")

    if user_file is None:
        user_file = user_config_path()
    try:
        found = user_file.exists()
    except (OSError, ValueError) as exc:        # a name too long, or one no file can have
        raise ConfigError(f"config error: cannot read {user_file}: {getattr(exc, 'strerror', None) or exc}") from None
    if required and not found:
        raise ConfigError(f"config error: --config {user_file}: no such file")
    if found:
        _apply_file(user_file, values, origins, str(user_file), renamed)

    variables = [(name, _env_key(name)) for name in sorted(env)
                 if name.startswith(ENV_PREFIX) and name != "RAGTUI_CONFIG"]
    for name, (spelled_section, spelled_key) in sorted(variables, key=lambda v: (v[1][0] in SECTIONS, v[0])):
        section, key = _current(spelled_section, spelled_key, name)
        if section != spelled_section:
            renamed.append(f"{name} -> {ENV_PREFIX}{section.upper()}_{key.upper()}")
        values[section][key] = _coerce(f"{spelled_section}.{spelled_key}",
                                       _parse_text(env[name], section, key), name, section, key)
        origins[f"{section}.{key}"] = name

    for item in overrides:
        dotted, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: expected section.key=value")
        spelled_section, _, spelled_key = dotted.strip().partition(".")
        section, key = _current(spelled_section, spelled_key, "--set")
        if section != spelled_section:
            renamed.append(f"--set {dotted.strip()} -> --set {section}.{key}")
        values[section][key] = _coerce(dotted, _parse_text(raw, section, key), "--set", section, key)
        origins[f"{section}.{key}"] = "--set"

    notices = (f"config: deprecated names, still read for now: {'; '.join(dict.fromkeys(renamed))}",) \
        if renamed else ()
    return _build(values, origins, notices)


def _build(values: dict[str, dict[str, Any]], origins: dict[str, str], notices: tuple[str, ...] = ()) -> Settings:
    sections = {name: cls(**values[name]) for name, cls in SECTIONS.items()}
    settings = Settings(**sections, origins=origins, notices=notices)
    _check_cross(settings)
    return settings


def _check_cross(s: Settings) -> None:
    """Rules that involve more than one key."""
    try:
        check_keys(s.keys, s.origins)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    bad = set(s.annotation.irrelevant_flags) - set(REGEX_FLAGS)
    if bad:
        raise ConfigError(_msg("annotation.irrelevant_flags", s.annotation.irrelevant_flags,
                               s.origins, 'any of the letters "i", "m", "s"'))
    try:
        s.annotation.irrelevant_marker  # noqa: B018 - compile to validate
    except re.error as exc:
        raise ConfigError(_msg("annotation.irrelevant_re", s.annotation.irrelevant_re, s.origins,
                               f"a valid regular expression ({exc})")) from None
    if s.strategies.multi_query == 1:
        raise ConfigError(_msg("strategies.multi_query", 1, s.origins, "0 (off) or 2-4 queries"))
    if s.ingest.entropy_min >= s.ingest.entropy_max:
        raise ConfigError(_msg("ingest.entropy_min", s.ingest.entropy_min, s.origins,
                               f"a value below ingest.entropy_max ({s.ingest.entropy_max})"))
    if s.llm.provider == "openai" and not s.llm.base_url:
        raise ConfigError(_msg("llm.base_url", "", s.origins,
                               'a URL such as "http://localhost:8000/v1" when llm.provider = "openai"'))
    if s.embed.provider == "openai" and not s.embed_server[0]:
        raise ConfigError(_msg("embed.base_url", "", s.origins, 'a URL such as "http://localhost:8080/v1" when '
                               'embed.provider = "openai" (or llm.provider = "openai" with its llm.base_url)'))
    if s.rerank.enabled and not (s.rerank.base_url and s.rerank.model):
        raise ConfigError(_msg("rerank.base_url", s.rerank.base_url, s.origins,
                               'a URL such as "http://localhost:8080/v1" and a rerank.model when '
                               'rerank.enabled = true'))
    for dotted in ("ollama.host", "llm.base_url", "embed.base_url", "rerank.base_url"):
        section, key = dotted.split(".")
        url = getattr(getattr(s, section), key)
        if url and not re.match(r"^https?://[^/\s]+", url):
            raise ConfigError(_msg(dotted, url, s.origins, "an http:// or https:// URL"))


def _msg(dotted: str, value: Any, origins: Mapping[str, str], allowed: str) -> str:
    return f"config error: {dotted} = {value!r} (from {origins.get(dotted, 'default')}): expected {allowed}"


def _apply_file(path: Path, values: dict[str, dict[str, Any]], origins: dict[str, str], origin: str,
                renamed: list[str]) -> None:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"config error: cannot read {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"config error: {path} is not UTF-8 text (line {line}: byte 0x{raw[exc.start]:02x}); "
                          "save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config error: {path} is not valid TOML: {exc}") from None
    where = "default (config.toml)" if origin == "default" else origin
    for section, table in data.items():
        if section not in SECTIONS and section not in _RENAMED_SECTIONS:
            raise ConfigError(f"config error: unknown section [{section}] in {path}; "
                              f"known: {', '.join(SECTIONS)}")
        if not isinstance(table, dict):
            raise ConfigError(f"config error: {section} in {path} must be a [{section}] table")
    # old spellings first, so that a new spelling in the same file wins
    for section, table in sorted(data.items(), key=lambda item: item[0] in SECTIONS):
        for spelled_key, value in table.items():
            new_section, key = _current(section, spelled_key, str(path))
            if new_section != section:
                renamed.append(f"{section}.{spelled_key} -> {new_section}.{key} (in {path})")
            values[new_section][key] = _coerce(f"{section}.{spelled_key}", value, where, new_section, key)
            origins[f"{new_section}.{key}"] = where


def _current(section: str, key: str, origin: str) -> tuple[str, str]:
    """The section and key that a spelling, current or deprecated (RENAMED), stands for; ConfigError if none."""
    new = RENAMED.get(f"{section}.{key}")
    if new is not None:
        new_section, _, new_key = new.partition(".")
        return new_section, new_key
    if section in _RENAMED_SECTIONS:
        old = [name.split(".")[1] for name in RENAMED if name.startswith(section + ".")]
        raise ConfigError(f"config error: unknown key {section}.{key} (from {origin}); "
                          f"[{section}] had: {', '.join(old)}")
    _check_known(section, key, origin)
    return section, key


def _check_known(section: str, key: str, origin: str) -> None:
    if section not in SECTIONS:
        raise ConfigError(f"config error: unknown section {section!r} (from {origin}); "
                          f"known: {', '.join(SECTIONS)}")
    names = [f.name for f in dataclasses.fields(SECTIONS[section])]
    if key not in names:
        raise ConfigError(f"config error: unknown key {section}.{key} (from {origin}); "
                          f"[{section}] has: {', '.join(names)}")


def _env_key(name: str) -> tuple[str, str]:
    """The section and key a RAGTUI_<SECTION>_<KEY> variable spells (the key not yet checked)."""
    rest = name[len(ENV_PREFIX):].lower()
    for section in (*SECTIONS, *_RENAMED_SECTIONS):
        if rest.startswith(section + "_"):
            return section, rest[len(section) + 1:]
    raise ConfigError(f"config error: unknown variable {name}; expected RAGTUI_<SECTION>_<KEY> "
                      f"with a section among {', '.join(SECTIONS)}")


def _field(section: str, key: str) -> dataclasses.Field[Any]:
    return next(f for f in dataclasses.fields(SECTIONS[section]) if f.name == key)


@functools.cache
def _hints(section: str) -> dict[str, Any]:
    """The section's fields and their types (evaluating the annotations' text once: every key of every
    settings file, variable and --set is read as its type, and a start reads them all)."""
    return typing.get_type_hints(SECTIONS[section])


def _kind(section: str, key: str) -> Any:
    return _hints(section)[key]


def _parse_text(raw: str, section: str, key: str) -> Any:
    """Text from an env variable or --set, read as the key's type (left as text if it is not)."""
    kind = _kind(section, key)
    text = raw.strip()
    if kind is bool:
        low = text.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        return raw
    if kind is int:
        try:
            return int(text)
        except ValueError:
            return raw
    if kind is float:
        try:
            return float(text)
        except ValueError:
            return raw
    if _is_list(kind):
        if text.startswith("["):
            try:
                return tomllib.loads(f"v = {text}")["v"]
            except tomllib.TOMLDecodeError:
                return raw
        return [p.strip() for p in text.split(",") if p.strip()]
    return raw


def _is_list(kind: Any) -> bool:
    return typing.get_origin(kind) in (list, types.GenericAlias) or kind is list


def _describe(kind: Any, meta: Mapping[str, Any]) -> str:
    if meta.get("choices"):
        return "one of " + ", ".join(f'"{c}"' for c in meta["choices"])
    names = {bool: "true or false", int: "an integer", float: "a finite number", str: "a string", Secret: "a string"}
    text = "a list of strings" if _is_list(kind) else names[kind]
    lo, hi = meta.get("lo"), meta.get("hi")
    if lo is not None and hi is not None:
        text += f" from {lo:g} to {hi:g}"
    return text


def _coerce(dotted: str, value: Any, origin: str, section: str, key: str) -> Any:
    kind = _kind(section, key)
    meta = _field(section, key).metadata
    allowed = _describe(kind, meta)

    def fail() -> ConfigError:
        return ConfigError(f"config error: {dotted} = {value!r} (from {origin}): expected {allowed}")

    if kind is bool:
        if not isinstance(value, bool):
            raise fail()
    elif kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail()
    elif kind is float:
        # NaN compares false with every bound, so it would pass any range: refused, with infinity, here
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise fail()
        value = float(value)
    elif _is_list(kind):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fail()
    elif kind is Secret:
        if not isinstance(value, str | Secret):
            raise ConfigError(f"config error: {dotted} (from {origin}): expected {allowed}")   # value unshown
        return value if isinstance(value, Secret) else Secret(value)
    elif not isinstance(value, str):
        raise fail()
    if meta.get("choices") and value not in meta["choices"]:
        raise fail()
    lo, hi = meta.get("lo"), meta.get("hi")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise fail()
    return value
