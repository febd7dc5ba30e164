"""The documentation says what the code does: the README stays a front door, every relative link leads somewhere,
docs/configuration.md lists every key of config.toml with its default, the key tables agree with the keymap, and
every file and dotted name docs/architecture.md quotes exists, its layer list being the layering test's."""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from pathlib import Path

import pytest

from ragtui.tui.keymap import ACTIONS, MOTION_KEYS, WIDGET_KEYS, key_display
from tests.test_layering import LAYERS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ragtui"
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MARKDOWN = [README, *sorted(DOCS.glob("*.md"))]
ARCHITECTURE = DOCS / "architecture.md"
# Endings of file names quoted in the docs, which read like a config key (`chroma.lock`) or a dotted name.
FILE_ENDINGS = {"py", "md", "toml", "json", "lock", "generation", "sqlite3"}
# Names of other libraries that architecture.md quotes.
EXTERNAL = {"asyncio"}


def file_name(code: str) -> bool:
    return code.rsplit(".", 1)[-1] in FILE_ENDINGS


def prose(text: str) -> str:
    """The text without its code blocks (fenced, or indented by four spaces after a blank line)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"(?:(?<=\n\n)|^)(?: {4}.*\n?)+", "", text)


def quoted(text: str) -> list[str]:
    """Every inline code span of the text outside its code blocks."""
    return re.findall(r"`([^`\n]+)`", prose(text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, only letters, digits, spaces, `-` and `_` kept, spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose(path.read_text(encoding="utf-8")), re.M):
        base = slug(heading)
        out.add(f"{base}-{seen[base]}" if base in seen else base)
        seen[base] = seen.get(base, 0) + 1
    return out


# The README ------------------------------------------------------------------------------------------------


def test_the_readme_is_a_front_door_with_the_two_commands_and_every_doc_linked() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 300
    assert "make demo" in text and "make test" in text     # .ci/run runs `make test`
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)", text))
    assert linked == {p.name for p in DOCS.glob("*.md")}, "README must link every doc"


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(path: Path) -> None:
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(path.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue                                        # https:, mailto:
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (resolved.suffix != ".md" or anchor not in anchors(resolved)):
            broken.append(f"{target}: no such heading")
    assert not broken, f"{path.name}: {broken}"


# The configuration -----------------------------------------------------------------------------------------


def config_keys() -> dict[str, object]:
    table = tomllib.loads((ROOT / "config.toml").read_text(encoding="utf-8"))
    return {f"{section}.{key}": value for section, keys in table.items() for key, value in keys.items()}


def test_the_configuration_doc_lists_every_key_of_config_toml_with_its_default() -> None:
    listed = re.findall(r"^- `(\w+\.\w+)` = `(.*?)`: ", (DOCS / "configuration.md").read_text(encoding="utf-8"), re.M)
    keys = config_keys()
    names = [name for name, _ in listed]
    assert sorted(names) == sorted(keys), (f"in config.toml only: {sorted(set(keys) - set(names))}; "
                                           f"in the doc only: {sorted(set(names) - set(keys))}")
    for name, default in listed:
        assert tomllib.loads(f"v = {default}")["v"] == keys[name], f"{name}: the doc says {default}"


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.name)
def test_every_key_a_doc_names_exists(path: Path) -> None:
    keys = config_keys()
    sections = {name.split(".")[0] for name in keys}
    named = {m.group(1) for code in quoted(path.read_text(encoding="utf-8"))
             if (m := re.fullmatch(r"(\w+\.\w+)(?: = .*)?", code)) and m.group(1).split(".")[0] in sections
             and not file_name(code)}
    unknown = sorted(named - set(keys))
    assert not unknown, f"{path.name} names keys config.toml does not have: {unknown}"


# The keys --------------------------------------------------------------------------------------------------

HANDLED_BY_WIDGETS = {key for keys, _ in (*WIDGET_KEYS, *MOTION_KEYS) for key in keys.split(" / ")}


def key_rows(path: Path) -> list[tuple[list[str], str]]:
    """Each row of the doc's key table ("| key | `[keys]` | action |"): its keys, and its [keys] entry or ""."""
    text = path.read_text(encoding="utf-8")
    table = text[text.index("| key | `[keys]` | action |"):].split("\n\n", 1)[0]
    rows = []
    for row in table.splitlines()[2:]:
        keys, entry = row.split("|")[1:3]
        rows.append((re.findall(r"`([^`]+)`", keys), entry.strip().strip("`")))
    return rows


@pytest.mark.parametrize("path", [README, DOCS / "guide.md"], ids=lambda p: p.name)
def test_each_key_in_a_key_table_is_the_keymaps(path: Path) -> None:
    by_id = {a.id: a for a in ACTIONS}
    for keys, entry in key_rows(path):
        if entry:
            assert entry in by_id, f"{path.name}: no action {entry} in the keymap"
            assert keys == [key_display(by_id[entry].key)], f"{path.name}: {entry} is {by_id[entry].key}, not {keys}"
        else:
            assert set(keys) <= HANDLED_BY_WIDGETS, f"{path.name}: {keys} is neither an action's nor a widget's key"


def test_the_guide_names_every_action_and_every_key_the_widgets_keep() -> None:
    rows = key_rows(DOCS / "guide.md")
    entries = {entry for _, entry in rows}
    assert not [a.id for a in ACTIONS if a.id not in entries], "docs/guide.md's key table lacks actions"
    listed = {key for keys, _ in rows for key in keys}
    motions = {key for keys, _ in MOTION_KEYS for key in keys.split(" / ")}
    assert motions <= listed, f"docs/guide.md's key table lacks {sorted(motions - listed)}"


# The architecture ------------------------------------------------------------------------------------------

MODULES = {".".join(p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__"): p
           for p in sorted(PACKAGE.rglob("*.py"))}


@functools.cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def definitions(scope: ast.Module | ast.ClassDef) -> dict[str, ast.AST]:
    """The names a module or class defines: its defs, classes and assignments (also under `if` or `try`) and, in a
    class, `self.name =` in its methods. An import does not count: a name is quoted where it lives."""
    out: dict[str, ast.AST] = {}
    pending = list(scope.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.setdefault(node.name, node)
            if isinstance(scope, ast.ClassDef) and not isinstance(node, ast.ClassDef):
                for inner in ast.walk(node):
                    for target in inner.targets if isinstance(inner, ast.Assign) else \
                            [inner.target] if isinstance(inner, ast.AnnAssign) else []:
                        if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                                and target.value.id == "self"):
                            out.setdefault(target.attr, inner)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, node)
        elif isinstance(node, ast.If | ast.Try | ast.With):
            pending += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", []),
                        *(h for handler in getattr(node, "handlers", []) for h in handler.body)]
    return out


def defined(scope: ast.Module | ast.ClassDef, name: str) -> ast.AST | None:
    return definitions(scope).get(name)


def resolves_in(scope: ast.Module | ast.ClassDef, parts: list[str]) -> bool:
    for i, part in enumerate(parts):
        node = defined(scope, part)
        if node is None:
            return False
        if i < len(parts) - 1:
            if not isinstance(node, ast.ClassDef):
                return False
            scope = node
    return True


def resolves(dotted: str) -> bool:
    """A module (by its path in ragtui, or its end: `ingest.transforms`, `transforms`), then names defined in it;
    or a class or function of any module (`Workspace.retrieve`)."""
    parts = re.split(r"[./]", dotted.removeprefix("ragtui."))
    for cut in range(len(parts), -1, -1):
        prefix = ".".join(parts[:cut])
        for module, path in MODULES.items():
            if (not cut or module == prefix or module.endswith("." + prefix)) and resolves_in(tree(path), parts[cut:]):
                return True
    return False


def exists(path: str) -> bool:
    if (ROOT / path).exists() or (PACKAGE / path).exists():
        return True
    end = path.rstrip("/")
    return any(str(p).endswith("/" + end) and (p.is_dir() or not path.endswith("/")) for p in PACKAGE.rglob("*"))


def architecture_names() -> tuple[list[str], list[str]]:
    """The file paths and the dotted code names docs/architecture.md quotes (config keys are checked above)."""
    sections = {name.split(".")[0] for name in config_keys()}
    paths, names = [], []
    for code in quoted(ARCHITECTURE.read_text(encoding="utf-8")):
        if re.fullmatch(r"\w[\w./-]*\.(py|toml|md)|\w[\w/]*/", code):
            paths.append(code)
        elif m := re.fullmatch(r"([A-Za-z_]\w*(?:[./][A-Za-z_]\w*)+)(?:\(.*\))?", code):
            name = m.group(1)
            config_key = name.count(".") == 1 and name.split(".")[0] in sections
            if "." in name and not config_key and not file_name(name) and name.split(".")[0] not in EXTERNAL:
                names.append(name)
    return paths, names


def test_every_file_architecture_md_quotes_exists() -> None:
    paths, _ = architecture_names()
    assert len(paths) > 40
    missing = sorted({p for p in paths if not exists(p)})
    assert not missing, f"docs/architecture.md quotes files that do not exist: {missing}"


def test_every_dotted_name_architecture_md_quotes_is_defined_where_it_says() -> None:
    _, names = architecture_names()
    assert len(names) > 40
    missing = sorted({n for n in names if not resolves(n)})
    assert not missing, f"docs/architecture.md quotes names that are not defined there: {missing}"


def test_the_layer_list_of_architecture_md_is_the_layering_tests() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text[text.index("## Layer rules"):].split("\n## ", 1)[0]
    documented = []
    for name, rest in re.findall(r"^\d+\. \*\*(\w+)\*\*[^:]*: (.*)$", section, re.M):
        modules = re.sub(r"\([^)]*\)", "", rest.split(" — ", 1)[0])
        documented.append((name, tuple(re.findall(r"`([^`]+)`", modules))))

    def shown(module: str) -> str:
        short = module.removeprefix("ragtui.")
        return short + "/" if module != "ragtui" and (PACKAGE / short.replace(".", "/")).is_dir() else short

    assert documented == [(name, tuple(shown(m) for m in modules)) for name, modules in LAYERS]
