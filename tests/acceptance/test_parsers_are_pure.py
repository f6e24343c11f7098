"""Parsers, judging and the lab generators stay free of the things they must not import."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_parsers_and_lab_generators_import_no_django():
    files = list((ROOT / "acceptance" / "parsers").glob("*.py"))
    files += list((ROOT / "lab" / "tool_outputs").glob("*.py"))
    for path in files:
        assert not any(n.split(".")[0] == "django" for n in imports(path)), path


def test_acceptance_never_imports_the_lab():
    for path in (ROOT / "acceptance").rglob("*.py"):
        assert not any(n.split(".")[0] == "lab" for n in imports(path)), path
