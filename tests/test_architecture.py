"""The folders are the architecture: dependencies point one way (cli -> library -> formats / io), no
import cycles, and only the command line talks to the terminal."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "defsent_cli"


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        out[name] = ast.parse(path.read_text(encoding="utf-8"))
    return out


def _imports(name: str, tree: ast.Module) -> set[str]:
    """The defsent_cli modules a module imports (relative imports resolved)."""
    is_package = (PACKAGE / Path(*name.split(".")[1:]) / "__init__.py").exists()
    package = name if is_package else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in MODULES}


MODULES = _modules()


def test_no_import_cycles():
    graph = {name: _imports(name, tree) - {name} for name, tree in MODULES.items()}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*path, node, nxt]))
            if nxt not in state:
                visit(nxt, [*path, node])
        state[node] = 2

    for name in graph:
        if name not in state:
            visit(name, [])


def test_library_never_imports_the_command_line_nor_talks_to_the_terminal():
    for name, tree in MODULES.items():
        if name.startswith("defsent_cli.cli") or name in ("defsent_cli.__main__",):
            continue
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "typer" not in imported and not any(m.startswith("cli") for m in imported), name
        assert not any(m.endswith("cli.app") or m == "defsent_cli.cli" for m in _imports(name, tree)), name
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        printing = [
            n.lineno
            for n in calls
            if (isinstance(n.func, ast.Name) and n.func.id == "print")
            or (isinstance(n.func, ast.Attribute) and n.func.attr == "print" and name != "defsent_cli.console")
        ]
        assert not printing, f"{name} prints at lines {printing}; use defsent_cli.log"


#: the layer every other imports and that imports none of them (constraints.py: the rules settings obey)
BOTTOM = ("defsent_cli.formats", "defsent_cli.io", "defsent_cli.errors", "defsent_cli.log", "defsent_cli.constraints")


def test_formats_and_io_depend_on_nothing_above_them():
    for name, tree in MODULES.items():
        if name.startswith(BOTTOM):
            above = [m for m in _imports(name, tree) if not m.startswith(BOTTOM)]
            assert above in ([], ["defsent_cli"]), f"{name} imports {above}"
