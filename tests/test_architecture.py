"""The folders are the architecture: dependencies point one way (cli -> library -> formats / io), no
import cycles, and only the command line talks to the terminal."""

from __future__ import annotations

import ast
import re
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


#: library rooms and the rooms above them, which they never import: the command line over the server, the server
#: over search (index build, ANN, collections, query encoding), search over the encoder, the formats and the spaces;
#: the evaluations (and training, above them) import search, never the other way round
ABOVE = {
    "defsent_cli.search": ("defsent_cli.cli", "defsent_cli.serve", "defsent_cli.evaluation", "defsent_cli.training"),
    "defsent_cli.serve": ("defsent_cli.cli", "defsent_cli.evaluation", "defsent_cli.training"),
}


def test_search_sits_below_the_server_and_the_evaluations():
    for room, above in ABOVE.items():
        for name, tree in MODULES.items():
            if name == room or name.startswith(room + "."):
                wrong = sorted(m for m in _imports(name, tree) if m.startswith(above))
                assert not wrong, f"{name} imports {wrong}, which sit above {room}"


def _command_modules() -> set[str]:
    """The modules of ``cli/`` that register a command (``app.command(...)``): each command's own module."""
    return {
        name
        for name, tree in MODULES.items()
        if name.startswith("defsent_cli.cli.")
        and any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "command"
            for n in ast.walk(tree)
        )
    }


def test_no_command_module_imports_another():
    """What commands share (options, groups, the helpers that read them) lives in the option and helper modules
    (``options.py``, ``groups.py``, ``models.py``, ``loop_options.py``, ``input_options.py``, ``search_options.py``,
    ``boundary.py``, ``render.py``, ``results.py``) or in the library, never in another command."""
    from defsent_cli.cli.app import command_modules

    commands = _command_modules()
    registered = command_modules()
    assert commands == {module.__name__ for module in registered}  # the app finds every command, no other
    orders = [module.HELP_ORDER for module in registered]  # each states where --help lists it, no two alike
    assert len(set(orders)) == len(orders)
    for name in sorted(commands):
        others = sorted((_imports(name, MODULES[name]) & commands) - {name})
        assert not others, f"{name} imports the command modules {others}: move what they share to an option module"


def _layout_entries() -> dict[str, str]:
    """docs/layout.md's map of the package: each folder's entry (``cli/``: its text, continuation lines included),
    and the package's own modules under ``""``."""
    text = (REPO / "docs" / "layout.md").read_text(encoding="utf-8")
    block = text.split("```\ndefsent_cli/\n", 1)[1].split("```", 1)[0]
    entries: dict[str, str] = {}
    current = ""
    for line in block.splitlines():
        folder = re.match(r"  ([a-z_]+/)", line)
        if folder:
            current = folder.group(1)
        elif re.match(r"  \S", line):  # a line of the package's own modules
            current = ""
        entries[current] = entries.get(current, "") + " " + line
    return entries


def test_the_layout_names_every_module():
    """docs/layout.md is the map a newcomer reads: every module of the package is named in its folder's entry."""
    entries = _layout_entries()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        parts = path.relative_to(PACKAGE).parts
        folder = "/".join(parts[:-1]) + "/" if len(parts) > 1 else ""
        if not re.search(rf"(?<![\w./]){re.escape(path.name)}", entries.get(folder, "")):
            missing.append("/".join(parts))
    assert not missing, f"docs/layout.md does not name {missing} in their folders' entries"
