"""Provisioning never imports acceptance: acceptance registers its gates with provisioning."""

from __future__ import annotations

import ast
from pathlib import Path

import provisioning

ROOT = Path(provisioning.__file__).parent


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):  # module level and inside functions alike
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_no_module_of_provisioning_imports_acceptance():
    offending = [
        f"{path.relative_to(ROOT.parent)}:{line} imports {name}"
        for path in sorted(ROOT.rglob("*.py"))
        if "migrations" not in path.parts
        for line, name in _imports(ast.parse(path.read_text()))
        if name == "acceptance" or name.startswith("acceptance.")
    ]
    assert offending == []


def test_the_walk_sees_an_import_inside_a_function():
    tree = ast.parse("def f():\n    from acceptance.runner import gate_phase\n")
    assert _imports(tree) == [(2, "acceptance.runner")]
