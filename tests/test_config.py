from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ragtui.config import SECTIONS, ConfigError, load_settings, shipped_config_path


def test_shipped_file_is_the_whole_schema_and_documented() -> None:
    text = shipped_config_path().read_text()
    data = tomllib.loads(text)
    assert set(data) == set(SECTIONS)
    lines = text.splitlines()
    for section, cls in SECTIONS.items():
        assert {f.name for f in dataclasses.fields(cls)} == set(data[section])
        for name in data[section]:
            i = next(n for n, line in enumerate(lines) if line.startswith(f"{name} ="))
            assert lines[i - 1].startswith("#") or lines[i - 2].startswith("#"), f"{section}.{name} undocumented"


def test_defaults_follow_ragweed(tmp_path: Path) -> None:
    s = load_settings(user_file=tmp_path / "none.toml", env={})
    # 384-token chunks (RAGWeed: 2048), so 8+ sources fit an 8k model (docs/benchmarks.md)
    assert (s.chunk.size_tokens, s.chunk.pdf_tokens, s.chunk.av_tokens, s.chunk.overlap_pct) == (384, 384, 384, 50)
    assert (s.ingest.entropy_max, s.ingest.entropy_min) == (7.0, 0.5)
    # fusion: rrf, not the additive boost, by the eval runs in docs/benchmarks.md
    assert (s.retrieve.top_k, s.retrieve.max_chunks_per_file, s.retrieve.fusion) == (64, 2, "rrf")
    assert (s.retrieve.keyword_weight, s.keyword.min_query_ic, s.keyword.long_query_threshold) == (0.15, 0.5, 5)
    assert (s.synonyms.max_per_word, s.annotation.concurrency, s.llm.max_tokens) == (5, 4, 1024)
    assert s.origins["retrieve.top_k"] == "default (config.toml)"


def test_precedence_file_env_flag(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text("[retrieve]\ntop_k = 10\nfusion = 'boost'\nkeyword_weight = 0.3\n")
    env = {"RAGTUI_RETRIEVE_TOP_K": "20", "RAGTUI_EMBED_EXTRA_MODELS": "all-minilm, mxbai-embed-large"}
    s = load_settings(user_file=user, env=env, overrides=["retrieve.top_k=30"])
    assert s.retrieve.top_k == 30 and s.origins["retrieve.top_k"] == "--set"
    assert s.retrieve.fusion == "boost" and s.origins["retrieve.fusion"] == str(user)
    assert s.retrieve.keyword_weight == 0.3
    assert s.embed.extra_models == ["all-minilm", "mxbai-embed-large"]
    assert s.origins["embed.extra_models"] == "RAGTUI_EMBED_EXTRA_MODELS"
    s2 = load_settings(user_file=user, env=env)
    assert s2.retrieve.top_k == 20 and s2.origins["retrieve.top_k"] == "RAGTUI_RETRIEVE_TOP_K"


def test_env_bool_and_float_parsing(tmp_path: Path) -> None:
    s = load_settings(user_file=tmp_path / "x", env={"RAGTUI_KEYWORD_ENABLED": "no",
                                                        "RAGTUI_RETRIEVE_KEYWORD_WEIGHT": "0.25"})
    assert s.keyword.enabled is False and s.retrieve.keyword_weight == 0.25


@pytest.mark.parametrize(
    ("toml", "env", "flags", "needles"),
    [
        ("[retrieve]\ntop_k = 'many'\n", {}, [], ["retrieve.top_k", "'many'", "integer", "user.toml"]),
        ("[retrieve]\ntop_k = 0\n", {}, [], ["retrieve.top_k", "= 0", "from 1 to 10000", "user.toml"]),
        ("[retrieve]\nfusion = 'max'\n", {}, [], ["retrieve.fusion", '"boost", "rrf"']),
        ("[retrieve]\ntopk = 3\n", {}, [], ["unknown key retrieve.topk", "user.toml", "top_k"]),
        ("[retreive]\ntop_k = 3\n", {}, [], ["unknown section [retreive]", "user.toml"]),
        ("[keyword]\nenabled = 1\n", {}, [], ["keyword.enabled", "true or false"]),
        ("[fts]\nenabled = 1\n", {}, [], ["fts.enabled", "true or false"]),          # as the user spelled it
        ("[fts]\nbm25_k = 1\n", {}, [], ["unknown key fts.bm25_k", "bm25_k1"]),
        ("", {"RAGTUI_RETRIEVE_TOP_K": "abc"}, [], ["retrieve.top_k", "'abc'", "RAGTUI_RETRIEVE_TOP_K"]),
        ("", {"RAGTUI_NOPE_X": "1"}, [], ["RAGTUI_NOPE_X"]),
        ("", {"RAGTUI_RETRIEVE_NOPE": "1"}, [], ["unknown key retrieve.nope", "RAGTUI_RETRIEVE_NOPE"]),
        ("", {}, ["annotation.concurrency=0"], ["annotation.concurrency", "--set", "from 1 to 256"]),
        ("", {}, ["retrieve.top_k"], ["section.key=value"]),
        ("", {}, ["annotation.irrelevant_re=(unclosed"], ["annotation.irrelevant_re", "regular expression"]),
        ("", {}, ["annotation.irrelevant_flags=x"], ["annotation.irrelevant_flags", '"i", "m", "s"']),
        ("", {}, ["ollama.host=localhost:11434"], ["ollama.host", "http://"]),
        ("", {}, ["ingest.entropy_min=7.5"], ["ingest.entropy_min", "below ingest.entropy_max"]),
        ("[chunk\n", {}, [], ["not valid TOML", "user.toml"]),
    ],
)
def test_each_kind_of_error_names_key_value_and_origin(
    tmp_path: Path, toml: str, env: dict[str, str], flags: list[str], needles: list[str]
) -> None:
    user = tmp_path / "user.toml"
    user.write_text(toml)
    with pytest.raises(ConfigError) as info:
        load_settings(user_file=user, env=env, overrides=flags)
    message = str(info.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message


def test_irrelevant_marker_uses_flags(tmp_path: Path) -> None:
    s = load_settings(user_file=tmp_path / "x", env={}, overrides=["annotation.irrelevant_flags=i"])
    assert s.annotation.irrelevant_marker.search("[irrelevant!!!]")
    s = load_settings(user_file=tmp_path / "x", env={})
    assert not s.annotation.irrelevant_marker.search("[irrelevant!!!]")


def test_replace_validates(tmp_path: Path) -> None:
    s = load_settings(user_file=tmp_path / "x", env={})
    assert s.replace(retrieve__top_k=5).retrieve.top_k == 5
    with pytest.raises(ConfigError):
        s.replace(retrieve__top_k=-1)


def test_data_dir_defaults_to_xdg(tmp_path: Path, isolated_home: Path) -> None:
    s = load_settings(user_file=tmp_path / "x", env={})
    assert s.data_dir == isolated_home / ".local/share/ragtui"


OLD_FILE = "[fts]\nenabled = false\nweight = 0.3\nmin_query_ic = 0.7\nlong_query_threshold = 7\nbm25_k1 = 1.4\n"
NEW_FILE = "[keyword]\nenabled = false\nmin_query_ic = 0.7\nlong_query_threshold = 7\nbm25_k1 = 1.4\n" \
           "[retrieve]\nkeyword_weight = 0.3\n"


def test_renamed_keys_old_and_new_spellings_give_the_same_settings(tmp_path: Path) -> None:
    old_file, new_file = tmp_path / "old.toml", tmp_path / "new.toml"
    old_file.write_text(OLD_FILE)
    new_file.write_text(NEW_FILE)
    old = load_settings(user_file=old_file, env={"RAGTUI_FTS_BM25_B": "0.4"}, overrides=["fts.weight=0.35"])
    new = load_settings(user_file=new_file, env={"RAGTUI_KEYWORD_BM25_B": "0.4"},
                        overrides=["retrieve.keyword_weight=0.35"])
    assert old.flat() == new.flat()
    assert (old.keyword.bm25_k1, old.keyword.bm25_b, old.retrieve.keyword_weight) == (1.4, 0.4, 0.35)
    assert old.origins["keyword.bm25_k1"] == str(old_file) and old.origins["keyword.bm25_b"] == "RAGTUI_FTS_BM25_B"
    assert new.notices == ()
    [notice] = old.notices                                     # one line for every old spelling met
    assert "\n" not in notice
    for needle in ("fts.weight -> retrieve.keyword_weight", "fts.bm25_k1 -> keyword.bm25_k1", str(old_file),
                   "RAGTUI_FTS_BM25_B -> RAGTUI_KEYWORD_BM25_B", "--set fts.weight -> --set retrieve.keyword_weight"):
        assert needle in notice


def test_the_new_spelling_wins_over_the_old_in_the_same_place(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text("[keyword]\nbm25_k1 = 1.1\n[retrieve]\nkeyword_weight = 0.2\n[fts]\nbm25_k1 = 1.9\nweight = 0.9\n")
    env = {"RAGTUI_KEYWORD_BM25_B": "0.3", "RAGTUI_FTS_BM25_B": "0.8"}
    s = load_settings(user_file=user, env=env)
    assert (s.keyword.bm25_k1, s.retrieve.keyword_weight, s.keyword.bm25_b) == (1.1, 0.2, 0.3)
    assert len(s.notices) == 1


def test_config_show_names_the_new_keys_and_says_the_old_ones_once(tmp_path: Path) -> None:
    old_file = tmp_path / "old.toml"
    old_file.write_text(OLD_FILE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HOME": str(tmp_path),
           "RAGTUI_FTS_BM25_B": "0.4"}

    def show(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ragtui", "--config", str(old_file), "--set", "fts.weight=0.35",
                               "config", "show", *args], capture_output=True, text=True, env=env, timeout=60,
                              check=False)

    text, as_json = show(), show("--json")
    assert text.returncode == 0 and as_json.returncode == 0
    for run in (text, as_json):
        [line] = run.stderr.splitlines()
        assert line.startswith("ragtui: config: deprecated names") and "retrieve.keyword_weight" in line
    assert "fts." not in text.stdout
    shown = {line.split()[0]: line.split()[1] for line in text.stdout.splitlines() if not line.startswith("#")}
    assert (shown["keyword.bm25_k1"], shown["keyword.bm25_b"], shown["retrieve.keyword_weight"]) == \
        ("1.4", "0.4", "0.35")
    data = json.loads(as_json.stdout)
    assert data["retrieve.keyword_weight"] == {"value": 0.35, "origin": "--set"}
    assert not any(key.startswith("fts.") for key in data)
