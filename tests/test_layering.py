"""The layer rules, read from the source with `ast`: no import cycles, and the engine never imports the TUI.

Cycles are looked for among module-level imports (the ones that run when a module
is imported; `if TYPE_CHECKING:` blocks do not run). The engine rule counts every
import, inside functions too: the engine must run, and be tested, without Textual.
The front ends (ragtui.tui, and ragtui.cli, which opens the TUI) are exempt from it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "ragtui"
FRONT_ENDS = ("ragtui.tui", "ragtui.cli", "ragtui.__main__")
UI_PACKAGES = ("ragtui.tui", "textual")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def imported(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    """The modules an import statement names; `from X import Y` is X.Y when that is a ragtui module."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert not node.level, f"{module}: relative import; ragtui uses absolute ones"
    base = node.module or ""
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def module_level_imports(module: str) -> set[str]:
    """Imports that run when the module is imported: top level, and inside top-level if/try, but not TYPE_CHECKING."""
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.update(imported(node, module))
            elif isinstance(node, ast.If) and not is_type_checking(node):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(ast.parse(MODULES[module].read_text(encoding="utf-8")).body)
    return found


def every_import(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return {name for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
            for name in imported(node, module)}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle as [a, b, ..., a], or [] when the graph has none."""
    state: dict[str, int] = {}          # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def test_the_walker_sees_every_kind_of_import() -> None:
    assert "ragtui.errors" in module_level_imports("ragtui.config")
    assert "ragtui.research" not in module_level_imports("ragtui.workspace")        # TYPE_CHECKING only
    assert "ragtui.research" in every_import("ragtui.workspace")                   # inside a method
    assert "ragtui.tui.app" in every_import("ragtui.cli")
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    graph = {m: {i for i in module_level_imports(m) if i in MODULES and i != m} for m in MODULES}
    assert find_cycle(graph) == []


def test_the_engine_never_imports_the_tui_or_textual() -> None:
    offenders = {m: sorted(i for i in every_import(m) if within(i, UI_PACKAGES))
                 for m in MODULES if not within(m, FRONT_ENDS)}
    assert {m: found for m, found in offenders.items() if found} == {}
