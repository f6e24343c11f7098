"""A gate is one row: everything about it is read from acceptance.gates, and the agent agrees."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from acceptance import planning
from acceptance.attestation_gate import AttestationGate
from acceptance.gates import (
    ATTESTATION,
    GATE_OF_TOOL,
    GATES,
    GATES_BY_NAME,
    GateName,
    gate_choices,
)
from acceptance.models import GateResult
from acceptance.parsers import PARSERS
from acceptance.profiles import parse_profile
from acceptance.rack_gate import MNDIAG_TOOL, RACK_GATE_TOOLS
from acceptance.runner import GatePhase, gate_phase
from acceptance.soak_runner import SoakGate
from agent import protocol
from provisioning.core import gates as provisioning_gates
from provisioning.core.phases import label_of, phase_for
from provisioning.core.plans import plan


def test_the_agents_own_tool_list_is_the_tools_the_gates_run():
    # The agent stands alone (it imports nothing of the server), so it keeps its own copy.
    declared = {tool for gate in GATES for tool in (*gate.tools, *gate.run_tools)}
    assert set(protocol.TOOLS) == declared | set(RACK_GATE_TOOLS) | {MNDIAG_TOOL}


def test_every_uploadable_tool_has_a_parser_and_one_gate():
    assert set(GATE_OF_TOOL) <= set(PARSERS)
    uploads = [tool for gate in GATES for tool in gate.uploads]
    assert len(uploads) == len(set(uploads)), "a tool's upload is filed under one gate"


def test_choices_labels_and_thresholds_come_from_the_rows():
    assert gate_choices() == [(g.name, g.label) for g in GATES]
    assert GateResult._meta.get_field("gate").choices == gate_choices()
    assert [(m.value, m.label) for m in GateName] == gate_choices()
    for gate in GATES:
        assert set(gate.defaults) <= set(gate.thresholds)
        assert label_of(provisioning_gates.step_name(gate.name)) == f"Gate: {gate.label}"


def test_a_profile_may_set_only_the_thresholds_a_row_declares():
    gate = GATES_BY_NAME["storage"]
    text = "sku: X\nversion: 1.0.0\ngates:\n  - gate: storage\n    thresholds:\n"
    parsed = parse_profile(text + "      min_read_mbps: 100\n")
    assert parsed.spec["gates"] == [{"gate": "storage", "thresholds": {"min_read_mbps": 100}}]
    with pytest.raises(Exception, match="unknown threshold 'bogus'"):
        parse_profile(text + "      bogus: 1\n")
    assert gate.thresholds_with({"min_read_mbps": 100}) == {
        "min_read_mbps": 100,
        "min_write_mbps": 3000,
        "fio_runtime_s": 60,
        "fio_iodepth": 32,
    }


@pytest.mark.django_db
def test_each_gates_runs_send_only_the_tools_it_declares(node):
    ctx = SimpleNamespace(node=node, manifest={})
    for gate in GATES:
        if gate.runs is None:
            continue
        sent = {spec["tool"] for spec in gate.runs(ctx, gate.defaults)}
        assert sent <= set(gate.run_tools), gate.name
        assert sent <= set(protocol.TOOLS), gate.name


def test_provisioning_reaches_the_gates_through_its_registry():
    for gate in GATES:
        phase = phase_for(provisioning_gates.step_name(gate.name))
        assert phase is planning.gate_phase(gate.name)
        if gate is ATTESTATION:
            # Keys, a challenge sealed to the EK, then the quote: a phase of its own.
            assert isinstance(phase, AttestationGate)
        else:
            assert phase is gate_phase(gate.name)
            assert isinstance(phase, SoakGate if gate.soak else GatePhase)
        assert phase.name == provisioning_gates.step_name(gate.name)
    assert provisioning_gates.gate_of("gate:fabric") == "fabric"
    assert provisioning_gates.gate_of("preflight") == ""


@pytest.mark.django_db
def test_without_a_registration_a_run_has_no_gates(manifest, profile):
    assert plan(manifest)[-1].startswith("gate:")
    registered = provisioning_gates.planning()
    provisioning_gates.register(provisioning_gates.NO_GATES)
    try:
        assert not any(provisioning_gates.gate_of(step) for step in plan(manifest))
        with pytest.raises(LookupError):
            phase_for("gate:fabric")
        assert label_of("gate:fabric") == "gate:fabric"
    finally:
        provisioning_gates.register(registered)
