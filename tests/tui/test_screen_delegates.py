"""The main screen holds no research logic: each research key calls the research view in one line, and the
screen never reaches into the view's panes. Read from the screen's source, so a verb or a guard written there
again fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import ragtui.tui.screens

SOURCE = ast.parse((Path(ragtui.tui.screens.__file__).parent / "main.py").read_text(encoding="utf-8"))
SCREEN = next(n for n in SOURCE.body if isinstance(n, ast.ClassDef) and n.name == "MainScreen")
# What the screen itself lays out and queries; everything else on screen belongs to the research view.
OWN_WIDGETS = {"CollectionsPane", "ResearchView", "StatusLine"}


def _body(method: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The statements of a method, its docstring left out."""
    body = method.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body


def _uses_research(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "research" and isinstance(n.value, ast.Name)
               and n.value.id == "self" for n in ast.walk(node))


def test_the_screen_imports_no_pane_of_the_research_view() -> None:
    imported = {alias.name for node in ast.walk(SOURCE) if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("ragtui.tui.widgets") for alias in node.names}
    assert imported <= OWN_WIDGETS, imported - OWN_WIDGETS


def test_each_research_key_calls_the_view_in_one_line() -> None:
    methods = [n for n in SCREEN.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    delegating = [m for m in methods if m.name.startswith("action_") and _uses_research(m)]
    assert len(delegating) >= 15
    for method in delegating:
        assert len(_body(method)) == 1, f"{method.name} does more than call the research view"


def test_the_screen_uses_only_the_views_public_verbs() -> None:
    for node in ast.walk(SCREEN):
        if isinstance(node, ast.Attribute) and _uses_research(node.value) and node.value is not node:
            inner = node.value
            if isinstance(inner, ast.Attribute) and inner.attr == "research":
                assert not node.attr.startswith("_") and node.attr not in {"panes", "query_one", "query",
                                                                           "session"}, node.attr
