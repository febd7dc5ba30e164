"""The layer rules of docs/architecture.md, read from the source with `ast` and asserted over every import.

Every import counts: at the top of a module, inside a function, and under
`if TYPE_CHECKING:` (an annotation is a dependency too, and a circle that only
type checking closes is still a circle a reader has to untangle). Each rule says
why it is there.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "ragtui"

UI_PACKAGES = ("ragtui.tui", "textual")

# The layers, lowest first. A module may import its own layer and the layers below it, never one above.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Pure leaves, shared by everything: the error root, the terminal filter, the words every reader ignores,
    # the token estimate, the time stamp, the user-path rule, the limits on server replies, the retry rule, the
    # one way heavy libraries are first imported, the display name of a model id, text folding, the quote matcher, the
    # number check,
    # what an answer copies from its prompt, numbers drawn as shapes, the way processes beside ours are started.
    ("leaves", ("ragtui", "ragtui.errors", "ragtui.sanitize", "ragtui.textfit", "ragtui.words", "ragtui.tokens",
                "ragtui.timestamps", "ragtui.paths", "ragtui.server_limits", "ragtui.retry", "ragtui.heavy",
                "ragtui.model_ids", "ragtui.text", "ragtui.quotes", "ragtui.numbers", "ragtui.echo", "ragtui.demo",
                "ragtui.plots", "ragtui.spawning")),
    # The nouns, and the settings (their sections' rules, and the layering that checks values against them): what
    # every layer above talks about, depending on nothing that does work.
    ("nouns", ("ragtui.model", "ragtui.config", "ragtui.config_sections", "ragtui.config_keys")),
    # What the engine reports, the small Ollama HTTP calls (version, tags, context length), and the embedding
    # client for embed.provider (Ollama's, or an OpenAI-compatible server's).
    ("reports", ("ragtui.events", "ragtui.ollama_api", "ragtui.embed_api")),
    # Storage: a collection's three stores, and the research history.
    ("storage", ("ragtui.stores", "ragtui.history")),
    # A collection: its stores, names, locks and states.
    ("collections", ("ragtui.library",)),
    # The three engines of the work: ingest, retrieval, the LLM calls; none of them imports another.
    # A session's bibliography (its references' metadata from .bib files and PDFs) rides on the same layer, and so
    # does the drawing of a cited PDF page with its chunk and quote boxed, and a session's bundle (its checks
    # recomputed with the LLM layer's citation parser, its documents read now with the ingest's extraction).
    ("work", ("ragtui.ingest", "ragtui.retrieve", "ragtui.llm", "ragtui.bibliography", "ragtui.page_render",
              "ragtui.bundle", "ragtui.citation_recheck")),
    # A research conversation: retrieval, annotation and synthesis in turns, saved to the history.
    ("research", ("ragtui.research",)),
    # The one object the front ends hold: it owns the collections, the history and the sessions.
    ("workspace", ("ragtui.workspace",)),
    # Tools on top of the engine.
    ("tools", ("ragtui.evaluation", "ragtui.doctor")),
    # The front ends: the TUI, `ragtui serve`'s web server and `ragtui mcp`'s server, then the CLI, which may start
    # any of them.
    ("tui", ("ragtui.tui", "ragtui.serve", "ragtui.mcp_server")),
    ("cli", ("ragtui.cli", "ragtui.__main__")),
)
# Packages of one layer that must not lean on each other, so each can be read and tested alone.
APART = (("ragtui.ingest", "ragtui.retrieve", "ragtui.llm"), ("ragtui.model", "ragtui.config"),
         ("ragtui.tui", "ragtui.serve", "ragtui.mcp_server"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def within(name: str, packages: tuple[str, ...]) -> bool:
    """`name` is one of `packages` or inside one; "ragtui" names the package's own __init__ only."""
    return any(name == p or (p != "ragtui" and name.startswith(p + ".")) for p in packages)


def imported(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    """The modules an import statement names; `from X import Y` is X.Y when that is a ragtui module."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert not node.level, f"{module}: relative import; ragtui uses absolute ones"
    base = node.module or ""
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]


def every_import(module: str) -> set[str]:
    """Every module `module` imports: top level, in functions, under TYPE_CHECKING."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return {name for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
            for name in imported(node, module)}


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


def ragtui_imports(module: str) -> set[str]:
    return {i for i in every_import(module) if (i == "ragtui" or i.startswith("ragtui.")) and i != module}


def layer_of(module: str) -> int:
    """The index of the most specific layer entry that holds `module`."""
    best, found = -1, -1
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            if within(module, (member,)) and len(member) > best:
                best, found = len(member), index
    assert found >= 0, f"{module} is in no layer: add it to LAYERS (and to docs/architecture.md)"
    return found


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


def package_of(module: str) -> str:
    """`ragtui.retrieve.hybrid` -> `ragtui.retrieve`; a top-level module is its own unit."""
    return ".".join(module.split(".")[:2])


def test_the_walker_sees_every_kind_of_import() -> None:
    assert "ragtui.errors" in every_import("ragtui.config")
    assert "ragtui.research.session" not in module_level_imports("ragtui.workspace")     # TYPE_CHECKING only
    assert "ragtui.research.session" in every_import("ragtui.workspace")          # TYPE_CHECKING and in a method
    assert "ragtui.tui.app" in every_import("ragtui.cli")
    assert layer_of("ragtui.model.conversation") == 1 and layer_of("ragtui") == 0 and layer_of("ragtui.cli") == 10
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []


def test_every_module_name_has_one_file() -> None:
    """`ragtui/x.py` beside a `ragtui/x/` package is never imported (the package wins) and hides from this walker."""
    files = sorted(ROOT.rglob("*.py"))
    clashing = sorted(name for name in {module_name(p) for p in files}
                      if sum(module_name(p) == name for p in files) > 1)
    assert not clashing, f"a module and a package share a name: {clashing}"


def test_no_import_cycle_among_the_imports_that_run() -> None:
    """Python cannot import a circle of module-level imports in every order; this one must hold at all times."""
    graph = {m: {i for i in module_level_imports(m) if i in MODULES and i != m} for m in MODULES}
    assert find_cycle(graph) == []


def test_no_import_cycle_between_modules() -> None:
    """A circle makes every module on it a prerequisite of every other: none can be read, loaded or tested alone."""
    graph = {m: {i for i in ragtui_imports(m) if i in MODULES} for m in MODULES}
    assert find_cycle(graph) == []


def test_no_import_cycle_between_packages() -> None:
    """The same at package level: two packages that lean on each other are one package in two folders."""
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        graph.setdefault(package_of(module), set()).update(
            package_of(i) for i in ragtui_imports(module) if package_of(i) != package_of(module))
    graph = {unit: {d for d in deps if d in graph} for unit, deps in graph.items()}
    assert find_cycle(graph) == []


def test_every_module_imports_only_its_layer_and_the_layers_below() -> None:
    """A lower layer that imports a higher one drags the higher one's dependencies (and its changes) down with it."""
    upward = {m: sorted(i for i in ragtui_imports(m) if layer_of(i) > layer_of(m)) for m in MODULES}
    assert {m: found for m, found in upward.items() if found} == {}


def test_packages_of_one_layer_stay_apart() -> None:
    """ingest, retrieve and llm are each usable alone; the nouns never depend on the settings, nor they on the nouns."""
    crossing = {m: sorted(i for i in ragtui_imports(m) for group in APART
                          if within(m, group) and within(i, group) and package_of(i) != package_of(m))
                for m in MODULES}
    assert {m: found for m, found in crossing.items() if found} == {}


def test_the_nouns_and_the_events_import_only_nouns_and_leaves() -> None:
    """Anything may hold a noun or an event, so they must not pull in anything that does work."""
    nouns = (*LAYERS[0][1], "ragtui.model")
    allowed = {"ragtui.model": nouns, "ragtui.events": nouns}
    outside = {m: sorted(i for i in ragtui_imports(m) if not within(i, allowed[package_of(m)]))
               for m in MODULES if package_of(m) in allowed}
    assert {m: found for m, found in outside.items() if found} == {}


def test_the_engine_never_imports_the_tui_or_textual() -> None:
    """The engine must run, and be tested, without Textual; only the front ends know it."""
    offenders = {m: sorted(i for i in every_import(m) if within(i, UI_PACKAGES))
                 for m in MODULES if layer_of(m) < layer_of("ragtui.tui")}
    assert {m: found for m, found in offenders.items() if found} == {}


def test_the_cli_takes_only_the_app_from_the_tui() -> None:
    """The CLI starts the TUI; any other TUI helper it borrowed would tie the two front ends together."""
    borrowed = {m: sorted(i for i in every_import(m) if within(i, ("ragtui.tui",)) and i != "ragtui.tui.app")
                for m in MODULES if within(m, ("ragtui.cli",))}
    assert {m: found for m, found in borrowed.items() if found} == {}


def test_the_tui_reaches_the_engine_through_one_seam() -> None:
    """Every engine call of the TUI goes through ragtui.tui.engine_door; the rest of the TUI holds only nouns, events,
    settings and leaves, so what the TUI asks of the engine is listed in one module."""
    shared = (*LAYERS[0][1], *LAYERS[1][1], "ragtui.events", "ragtui.tui")
    direct = {m: sorted(i for i in ragtui_imports(m) if not within(i, shared))
              for m in MODULES if within(m, ("ragtui.tui",)) and m != "ragtui.tui.engine_door"}
    assert {m: found for m, found in direct.items() if found} == {}


def runtime_imports(module: str) -> set[str]:
    """Every import that can run: top level and in functions, but not under `if TYPE_CHECKING:`."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node):
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.update(imported(node, module))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(MODULES[module].read_text(encoding="utf-8")))
    return found


def test_heavy_load_imports_every_heavy_module_ragtui_names() -> None:
    """`heavy.load(L)` imports every module of library L that any ragtui module imports (a step named after
    one module, the optional OpenAI-compatible client, imports that one), so once a thread has
    called it, that thread's later imports of L are lookups in sys.modules: no first import of a heavy module
    runs outside heavy's lock (a path that imports before calling `load` is caught by the import audit of
    tests/demo_first_run_driver.py and tests/heavy_import_driver.py). Checked in a fresh interpreter."""
    import json
    import subprocess
    import sys

    from ragtui import heavy

    named: dict[str, set[str]] = {step: set() for step in heavy.NAMES}
    for module in MODULES:
        if module != "ragtui.heavy":
            for name in runtime_imports(module):
                step = name if name in named else name.split(".", 1)[0]   # a step may be one module of its own
                if step in named:
                    named[step].add(name)
    script = ("import json, sys\nfrom ragtui import heavy\nloaded = {}\nfor name in heavy.NAMES:\n"
              "    heavy.load(name)\n    loaded[name] = sorted(sys.modules)\nprint(json.dumps(loaded))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT.parent, capture_output=True, text=True,
                          timeout=300, check=True)
    loaded = json.loads(done.stdout)
    missing = {step: sorted(names - set(loaded[step])) for step, names in named.items()}
    assert {step: names for step, names in missing.items() if names} == {}


def test_a_module_that_imports_a_heavy_library_at_its_top_loads_it_through_heavy_first() -> None:
    """Importing such a module runs its heavy imports in whatever thread imports it first; a top-level
    `heavy.load(step)` before them makes them lookups (the step covers every library before it in ORDER)."""
    from ragtui import heavy

    def step_of(name: str) -> str:
        return name if name in heavy.NAMES else name.split(".", 1)[0]

    script = "ragtui.demo.make_pdf"   # run by hand to rebuild the demo's PDF, in a process of its own
    assert not [m for m in MODULES if script in ragtui_imports(m)]
    offenders: dict[str, list[str]] = {}
    for module in MODULES:
        if module in ("ragtui.heavy", script):
            continue
        loaded = -1
        for node in ast.parse(MODULES[module].read_text(encoding="utf-8")).body:
            call = node.value if isinstance(node, ast.Expr) else None
            if isinstance(call, ast.Call) and ast.unparse(call.func) == "heavy.load":
                through = call.args[0].value if call.args else "pymupdf"  # type: ignore[attr-defined]
                loaded = max(loaded, heavy.NAMES.index(through))
            elif isinstance(node, ast.Import | ast.ImportFrom):
                for name in imported(node, module):
                    if step_of(name) in heavy.NAMES and heavy.NAMES.index(step_of(name)) > loaded:
                        offenders.setdefault(module, []).append(name)
    assert offenders == {}
