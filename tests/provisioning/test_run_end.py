"""The run core's one exit (provisioning/core/run_end.py): every end of a run, every reopening and every
move of a node in or out of service tells the day-2 followers, in the order ProvisioningConfig
declared; a follower registered here is told too, and can be removed; and the modules that end
runs (engine, runs, completion, decisions) import none of the day-2 modules they used to call."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from acceptance import decisions
from acceptance.models import AcceptanceProfile
from fleet.choices import NodeKind, NodeState
from fleet.models import Node
from provisioning.choices import PhaseStatus, RunKind, RunStatus
from provisioning.core import run_end, session_ends
from provisioning.core.completion import complete_run
from provisioning.core.engine import fail_run
from provisioning.core.run_end import How, RunEnding
from provisioning.core.runs import abort_run, retry_run
from provisioning.day2 import rollouts, scheduler_sync, suspect
from provisioning.day2.wipes import certificates as wipes
from provisioning.models import PhaseRecord, Run
from provisioning.rack import runs as rack_runs
from tests.factories import make_node
from tests.support.scenes import awaiting_node, make_run, walk

ROOT = Path(__file__).resolve().parents[2]

# ProvisioningConfig.ready()'s order: a wipe request settles before anything else reads it, a
# rollout starts its next node last, once the node is where this move left it; so does a rack
# run waiting on its member's run.
DECLARED = (
    wipes.follow_run_end,
    suspect.follow_run_end,
    session_ends.follow_run_end,
    scheduler_sync.follow_run_end,
    rollouts.follow_run_end,
    rack_runs.follow_run_end,
)
FOLLOWING_MODULES = [follower.__module__ for follower in DECLARED]

# What the day-2 wing holds: the run core tells it through run_end and never imports it.
DAY_2_MODULES = frozenset(
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for path in (ROOT / "provisioning" / "day2").rglob("*.py")
)
RUN_CORE_FILES = (
    "provisioning/core/engine.py",
    "provisioning/core/runs.py",
    "provisioning/core/completion.py",
    "provisioning/core/run_end.py",
    "acceptance/decisions.py",
)


@pytest.fixture
def told():
    """Who was told what, in order: each declared follower wrapped, and still doing its job."""
    log: list[tuple[str, How]] = []

    def recorded(follower):
        def recording(ending: RunEnding) -> None:
            log.append((follower.__module__, ending.how))
            follower(ending)

        return recording

    declared = run_end.followers()
    wrappers = [recorded(follower) for follower in declared]
    for follower in declared:
        run_end.unregister(follower)
    run_end.register(*wrappers)
    try:
        yield log
    finally:
        for wrapper in wrappers:
            run_end.unregister(wrapper)
        run_end.register(*declared)


def _put(node: Node, state: str) -> None:
    # Set-up only: put the node where the run would have it.
    Node.objects.filter(pk=node.pk).update(state=state)
    node.refresh_from_db()


def _running(rack, *, kind: str = RunKind.PROVISION) -> Run:
    node = make_node(rack=rack)
    _put(node, NodeState.PROVISIONING)
    return make_run(node, phases_done=2, kind=kind)


def _passed(run: Run) -> Run:
    # Set-up: every phase and gate of the run done, the node at its gates.
    PhaseRecord.objects.filter(run=run).update(status=PhaseStatus.DONE)
    _put(run.node, NodeState.VALIDATING)
    return Run.objects.get(pk=run.pk)


def _fail(rack, bob) -> None:
    run = _running(rack)
    fail_run(run, run.phases.get(phase=run.current_phase), "BMC unreachable")


def _abort(rack, bob) -> None:
    abort_run(_running(rack), actor=bob, reason="wrong rack")


def _retry(rack, bob) -> None:
    run = _running(rack)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED)
    _put(run.node, NodeState.FAILED)
    retry_run(Run.objects.get(pk=run.pk), actor=bob, reason="BMC back")


def _succeed(rack, bob) -> None:
    complete_run(_passed(_running(rack)))


def _succeed_back_into_service(rack, bob) -> None:
    run = _running(rack, kind=RunKind.SUSPECT)
    # The profile returns re-checked nodes to service without a click.
    profile = AcceptanceProfile.current_for(run.node.sku)
    spec = {**profile.spec, "auto_return_to_service": True}
    AcceptanceProfile.objects.filter(pk=profile.pk).update(spec=spec)
    complete_run(_passed(run))


@pytest.mark.django_db
def test_a_rack_member_waits_for_its_racks_decision_though_the_profile_returns_nodes(
    rack, manifest, profile
):
    run = _running(rack, kind=RunKind.SUSPECT)
    Node.objects.filter(pk=run.node_id).update(kind=NodeKind.COMPUTE_TRAY, member_index=1)
    profile = AcceptanceProfile.current_for(run.node.sku)
    spec = {**profile.spec, "auto_return_to_service": True}
    AcceptanceProfile.objects.filter(pk=profile.pk).update(spec=spec)
    complete_run(_passed(Run.objects.get(pk=run.pk)))
    assert Node.objects.get(pk=run.node_id).state == NodeState.AWAITING_APPROVAL


def _approve(rack, bob) -> None:
    decisions.approve(awaiting_node(rack), bob, reason="all green")


def _quarantine_in_service(rack, bob) -> None:
    node = walk(make_node(rack=rack), NodeState.IN_SERVICE)
    decisions.quarantine(node, bob, reason="fan noise on GPU 3")


MOVES = {
    "failed": (_fail, [How.FAILED]),
    "aborted": (_abort, [How.ABORTED]),
    "reopened": (_retry, [How.REOPENED]),
    "succeeded": (_succeed, [How.SUCCEEDED]),
    # The node enters service inside its run's end, before the run's "succeeded" is recorded.
    "succeeded-back-into-service": (
        _succeed_back_into_service,
        [How.ENTERED_SERVICE, How.SUCCEEDED],
    ),
    "approved": (_approve, [How.ENTERED_SERVICE]),
    "quarantined-from-service": (_quarantine_in_service, [How.LEFT_SERVICE]),
}


def test_the_day_2_modules_follow_in_the_declared_order():
    assert run_end.followers() == DECLARED


@pytest.mark.django_db
@pytest.mark.parametrize("move", MOVES)
def test_every_kind_of_ending_tells_each_follower_in_the_declared_order(
    move, told, rack, manifest, profile, bob
):
    make, hows = MOVES[move]
    make(rack, bob)
    assert told == [(module, how) for how in hows for module in FOLLOWING_MODULES]


@pytest.mark.django_db
def test_a_follower_registered_here_is_told_and_can_be_removed(rack, manifest, bob):
    heard: list[RunEnding] = []

    def follower(ending: RunEnding) -> None:
        heard.append(ending)

    run_end.register(follower)
    try:
        assert run_end.followers() == (*DECLARED, follower)
        run = _running(rack)
        abort_run(run, actor=bob, reason="wrong rack")
    finally:
        run_end.unregister(follower)

    assert heard == [RunEnding(How.ABORTED, run.node, run, "aborted: wrong rack", "bob")]
    assert run_end.followers() == DECLARED
    other = _running(rack)
    fail_run(other, other.phases.get(phase=other.current_phase), "BMC unreachable")
    assert len(heard) == 1
    assert Run.objects.get(pk=other.pk).status == RunStatus.FAILED


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports (and each name it imports from one, as a possible module)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def test_the_walk_resolves_relative_and_absolute_imports():
    found = imported_modules(ROOT / "provisioning" / "core" / "engine.py")
    assert "provisioning.core.run_end" in found  # `from .run_end import ...`
    assert "fleet.models" in found  # `from fleet.models import ...`
    assert "provisioning.clock" in found  # `from .. import clock`


@pytest.mark.parametrize("path", RUN_CORE_FILES)
def test_the_run_core_imports_no_day_2_module(path):
    day_2 = sorted(imported_modules(ROOT / path) & DAY_2_MODULES)
    assert not day_2, f"{path} imports {', '.join(day_2)}: tell them through run_end's followers"
