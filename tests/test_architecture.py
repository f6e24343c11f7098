"""The packages stack one way: each imports only the packages below it, and no cycle hides anywhere.

Every module of the project (the lab's too) is read with `ast`, never imported: a module-level
import, an import inside a function, `importlib.import_module("...")`, Django's
`include("...")` and a model named as "app.Model" in a relation all count.
docs/architecture.md, "How the packages stack", draws the same table.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Bottom to top. A package imports only packages of a lower row; packages of one row stand
# alone (agent and bootimage run on a node, far from the server, and need nothing of each other).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("common",),  # shared technical pieces: lab mode, checks, prepared reads, API bases
    ("agent", "bootimage"),  # what runs on a node and what boots it: standalone
    ("fleet",),  # the domain: models, choices, lifecycle, events, manifests, roles
    ("provisioning",),  # the pipeline
    ("acceptance",),  # the gates
    ("console",),  # pages, live view, REST API, metrics, exports, DCIM sync
    ("greenlight",),  # the roof: settings, URL roots, entry points, and nothing else
)
ROOF = "greenlight"
# The roof's modules put the packages together, so they may import any production package (never
# the lab), at module level or in the functions their servers call at start-up.
WIRING = frozenset(
    {
        "greenlight",
        "greenlight.settings",
        "greenlight.urls",
        "greenlight.asgi",
        "greenlight.wsgi",
        "greenlight.node_wsgi",
        "greenlight.node_gunicorn",
        "greenlight.node_urls",
        "greenlight.celery",
    }
)
# Beside the tests: may import anything; no production module imports it.
LAB = "lab"

LAYER_OF = {package: row for row, packages in enumerate(LAYERS) for package in packages}
PACKAGES = frozenset(LAYER_OF) | {LAB}
RELATION_FIELDS = frozenset({"ForeignKey", "OneToOneField", "ManyToManyField"})
STRING_IMPORTS = frozenset({"import_module", "include"})


@dataclass(frozen=True)
class Import:
    module: str
    line: int
    target: str
    in_function: bool
    in_ready: bool  # inside AppConfig.ready(), Django's documented place for such imports

    def __str__(self) -> str:
        where = " (in a function)" if self.in_function else ""
        return f"{self.module}:{self.line} -> {self.target}{where}"


def package_of(module: str) -> str:
    return module.split(".")[0]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def project_files() -> list[Path]:
    files = []
    for package in sorted(PACKAGES):
        for path in sorted((ROOT / package).rglob("*.py")):
            # Migrations are frozen history, written by makemigrations, and name apps by label.
            if "migrations" not in path.relative_to(ROOT).parts:
                files.append(path)
    return files


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _string_target(node: ast.Call) -> str | None:
    """The module or app a call names in a string: import_module("x"), include("x"), FK("a.M")."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if not node.args or not isinstance(node.args[0], ast.Constant):
        return None
    value = node.args[0].value
    if not isinstance(value, str):
        return None
    if name in STRING_IMPORTS:
        return value
    if name in RELATION_FIELDS and value.count(".") == 1:
        return value.split(".")[0]
    return None


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.is_package = is_package
        self.functions: list[str] = []
        self.found: list[Import] = []

    def _add(self, node: ast.AST, target: str) -> None:
        if package_of(target) in PACKAGES:
            in_ready = self.module.endswith(".apps") and self.functions[:1] == ["ready"]
            found = Import(self.module, node.lineno, target, bool(self.functions), in_ready)
            if found not in self.found:  # `from x import a, b` is one import of x
                self.found.append(found)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _absolute(self.module, self.is_package, node)
        for alias in node.names:
            # `from . import models` imports the module fleet.models, not just the package.
            submodule = f"{base}.{alias.name}"
            self._add(node, submodule if is_module(submodule) else base)

    def visit_Call(self, node: ast.Call) -> None:
        target = _string_target(node)
        if target:
            self._add(node, target)
        self.generic_visit(node)


@cache
def project_imports() -> tuple[Import, ...]:
    """Every import of a project module by a project module (the tests' own excepted)."""
    found: list[Import] = []
    for path in project_files():
        module = module_name(path)
        collector = _Collector(module, path.name == "__init__.py")
        collector.visit(ast.parse(path.read_text(), filename=str(path)))
        found.extend(collector.found)
    return tuple(found)


def against_the_direction(imp: Import) -> str | None:
    """Why `imp` goes the wrong way, or None."""
    source, target = package_of(imp.module), package_of(imp.target)
    if source == target or source == LAB:
        return None
    if target == LAB:
        return "production imports the lab"
    if LAYER_OF[target] == LAYER_OF[source]:
        return f"{source} and {target} stand alone"
    if LAYER_OF[target] > LAYER_OF[source]:
        return f"{source} sits below {target}"
    return None


def test_the_layer_table_names_every_package():
    on_disk = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert on_disk == set(PACKAGES), "add the package to LAYERS (and to the docs' drawing)"


def test_the_roof_is_only_the_roof():
    # Shared pieces belong in common/, at the bottom: a module of the roof that others import
    # would make an arrow that runs up.
    roof = {module_name(p) for p in (ROOT / ROOF).rglob("*.py")}
    assert roof == WIRING, f"only wiring under {ROOF}/: move {sorted(roof - WIRING)} to common/"


def test_the_walk_sees_imports_at_every_level():
    # A walk that missed any of these forms would let the tests below pass with a cycle hidden.
    source = (
        "from . import models\n"
        "class C:\n"
        "    def f(self):\n"
        "        from provisioning.core.runs import start_run\n"
        "        importlib.import_module('acceptance.gates')\n"
        "        node = ForeignKey('fleet.Node')\n"
        "class FleetConfig:\n"
        "    def ready(self):\n"
        "        import console.checks\n"
    )
    collector = _Collector("fleet.apps", is_package=False)
    collector.visit(ast.parse(source))
    found = [(i.target, i.in_function, i.in_ready) for i in collector.found]
    assert found == [
        ("fleet.models", False, False),
        ("provisioning.core.runs", True, False),
        ("acceptance.gates", True, False),
        ("fleet", True, False),
        ("console.checks", True, True),
    ]


def test_the_direction_rule_refuses_what_it_should():
    def why(module: str, target: str) -> str | None:
        return against_the_direction(Import(module, 1, target, False, False))

    assert why("fleet.board", "provisioning.models") == "fleet sits below provisioning"
    assert why("common.checks", "provisioning.schedulers") == "common sits below provisioning"
    assert why("console.views", "greenlight.urls") == "console sits below greenlight"
    assert why("agent.runner", "bootimage.build") == "agent and bootimage stand alone"
    assert why("console.views", "lab.run") == "production imports the lab"
    assert why("greenlight.urls", "lab.urls") == "production imports the lab"
    assert why("console.views", "provisioning.day2.moves") is None
    assert why("greenlight.asgi", "console.routing") is None  # wiring
    assert why("lab.run", "console.views") is None


def test_no_import_goes_against_the_direction():
    wrong = [f"{imp}: {why}" for imp in project_imports() if (why := against_the_direction(imp))]
    assert not wrong, "imports against the direction:\n" + "\n".join(wrong)


# provisioning's floors, bottom to top: a module imports only modules of its own floor or lower.
# The ground holds the leaves every floor shares; the top is the app's wiring (admin, ready(),
# tasks, URLs, pages), which puts the floors together.
PROVISIONING_FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "choices",
        "models",
        "outcomes",
        "clock",
        "artifacts",
        "scheduling",
        "admission",
        "step_writes",
        "site_work",
        "rack_models",
        "migrations",
    ),
    ("redfish",),  # speaking Redfish to a BMC, vendor by vendor
    ("errors", "schedulers"),  # the pipeline's error kinds; the tenants' scheduler adapters
    ("boot",),  # the boot plane: credentials, media, images, boot path, what nodes fetch
    ("agents",),  # the agent channel: sessions, command queue, logs, redaction, agent API
    ("core",),  # the run core: engine, phases, runs and their one exit, plans, gates, sweep
    # enrolling nodes; the day-2 wing that follows the run core's exit; rack runs (stages of
    # member node runs)
    ("intake", "day2", "rack"),
    ("admin", "apps", "checks", "management", "tasks", "urls", "views", ""),  # the wiring
)
FLOOR_OF = {name: row for row, names in enumerate(PROVISIONING_FLOORS) for name in names}


def floor_of(module: str) -> int | None:
    """The floor of a provisioning module (None outside provisioning)."""
    parts = module.split(".")
    if parts[0] != "provisioning":
        return None
    return FLOOR_OF[parts[1] if len(parts) > 1 else ""]


def below_its_floor(imp: Import) -> str | None:
    """Why `imp`, inside provisioning, goes up a floor, or None."""
    source, target = floor_of(imp.module), floor_of(imp.target)
    if source is None or target is None or target <= source:
        return None
    return f"{imp.module} sits below {imp.target}"


def test_the_floor_table_names_every_folder_of_provisioning():
    on_disk = {p.stem for p in (ROOT / "provisioning").iterdir() if p.suffix == ".py"}
    on_disk |= {p.name for p in (ROOT / "provisioning").iterdir() if (p / "__init__.py").is_file()}
    on_disk |= {"migrations"}
    assert on_disk - {"__init__"} == set(FLOOR_OF) - {""}, "add it to PROVISIONING_FLOORS"


def test_the_floor_rule_refuses_what_it_should():
    def why(module: str, target: str) -> str | None:
        return below_its_floor(Import(module, 1, target, False, False))

    assert why("provisioning.core.phases.inband", "provisioning.day2.wipes.certificates")
    assert why("provisioning.agents.sessions", "provisioning.core.runs")
    assert why("provisioning.boot.path", "provisioning.agents.link")
    assert why("provisioning.day2.rollouts", "provisioning.core.runs") is None
    assert why("provisioning.core.engine", "provisioning.core.phases") is None


def test_no_import_goes_up_a_floor_of_provisioning():
    wrong = [f"{imp}: {why}" for imp in project_imports() if (why := below_its_floor(imp))]
    assert not wrong, "imports up a floor of provisioning:\n" + "\n".join(wrong)


def test_no_function_level_import_of_a_project_module():
    # A function-level import is how a cycle hides; the wiring modules and AppConfig.ready()
    # (Django's documented place for imports that need the app registry) are the exceptions.
    hidden = [
        str(imp)
        for imp in project_imports()
        if imp.in_function and not imp.in_ready and imp.module not in WIRING
    ]
    assert not hidden, "function-level imports of project modules:\n" + "\n".join(hidden)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one package (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def test_no_cycle_between_packages():
    edges: dict[str, set[str]] = defaultdict(set)
    witness: dict[tuple[str, str], Import] = {}
    for imp in project_imports():
        source, target = package_of(imp.module), package_of(imp.target)
        if source == target or imp.module in WIRING:
            continue
        edges[source].add(target)
        edges.setdefault(target, set())  # every package is a node of the graph
        witness.setdefault((source, target), imp)
    lines = []
    for group in _cycles(edges):
        members = set(group)
        lines.append(" <-> ".join(group))
        lines += [f"  {imp}" for (s, t), imp in witness.items() if s in members and t in members]
    assert not lines, "cycles between packages:\n" + "\n".join(lines)


def test_the_cycle_finder_finds_a_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]
