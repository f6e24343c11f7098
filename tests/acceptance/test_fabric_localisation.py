"""Fabric pairing: a node with a slow NIC is in every slow pair, and only that node fails."""

import pytest

from acceptance import fabric
from acceptance.choices import Verdict
from acceptance.fabric import PairResult, judge_fabric, localise_fabric, plan_fabric_pairs
from acceptance.gates import FABRIC
from acceptance.verdicts import SkuFacts
from lab.tool_outputs import make_node, nccl_all_reduce

HGX = SkuFacts(8, 8, 400, 450, 8)


def rack(count: int) -> dict:
    return {n.node_id: n for n in (make_node(f"r7-u{i:02d}", seed=3) for i in range(count))}


def run_pairs(nodes: dict, faults: dict, rail: int | None = None) -> list[PairResult]:
    return [
        PairResult(
            a,
            b,
            nccl_all_reduce((nodes[a], nodes[b]), faults, rail=rail),
            rail=None if rail is None else f"NIC {rail}",
        )
        for a, b in plan_fabric_pairs(list(nodes))
    ]


@pytest.mark.parametrize("count", [3, 4, 5, 8, 16])
def test_plan_gives_every_node_two_different_partners(count):
    nodes = [f"n{i}" for i in range(count)]
    pairs = plan_fabric_pairs(nodes)
    assert len({frozenset(p) for p in pairs}) == len(pairs)
    for node in nodes:
        partners = {b if a == node else a for a, b in pairs if node in (a, b)}
        assert len(partners) >= (4 if count >= 5 else 2)


def test_plan_small_racks():
    assert plan_fabric_pairs(["a"]) == []
    assert plan_fabric_pairs(["b", "a"]) == [("a", "b")]


@pytest.mark.parametrize("count", [3, 6, 8])
@pytest.mark.parametrize("bad", [0, 2])
def test_single_slow_node_is_the_only_one_named(count, bad):
    nodes = rack(count)
    culprit = list(nodes)[bad]
    faults = {culprit: {"name": "slow_nic", "component": "NIC 0"}}
    findings = localise_fabric(run_pairs(nodes, faults), HGX, FABRIC.defaults)
    assert {node for node, f in findings.items() if f} == {culprit}
    assert "busbw" in findings[culprit][0].message
    verdicts = judge_fabric(run_pairs(nodes, faults), HGX, FABRIC.defaults)
    assert {n for n, v in verdicts.items() if v.verdict == Verdict.FAIL} == {culprit}
    assert all(v.verdict == Verdict.PASS for n, v in verdicts.items() if n != culprit)


def test_good_node_between_two_bad_ones_is_cleared():
    nodes = rack(8)
    ids = list(nodes)
    faults = {ids[1]: {"name": "slow_nic"}, ids[3]: {"name": "slow_nic"}}
    findings = localise_fabric(run_pairs(nodes, faults), HGX, FABRIC.defaults)
    assert {node for node, f in findings.items() if f} == {ids[1], ids[3]}


def test_healthy_rack_has_no_findings():
    findings = localise_fabric(run_pairs(rack(6), {}), HGX, FABRIC.defaults)
    assert all(f == [] for f in findings.values())


def test_per_rail_runs_name_the_nic():
    nodes = rack(4)
    culprit = list(nodes)[1]
    faults = {culprit: {"name": "slow_nic", "component": "NIC 3"}}
    results = run_pairs(nodes, faults, rail=0) + run_pairs(nodes, faults, rail=3)
    findings = localise_fabric(results, HGX, FABRIC.defaults)
    assert [f.part for f in findings[culprit]] == ["NIC 3"]
    assert findings[culprit][0].message.startswith("NIC 3: busbw")


def test_lab_catalog_alias_nic_slow_is_understood():
    nodes = rack(4)
    culprit = list(nodes)[2]
    faults = {culprit: {"name": "nic_slow", "index": "0"}}
    findings = localise_fabric(run_pairs(nodes, faults), HGX, FABRIC.defaults)
    assert {node for node, f in findings.items() if f} == {culprit}


def test_two_node_rack_blames_both_and_says_why():
    nodes = rack(2)
    a, b = nodes
    findings = localise_fabric(run_pairs(nodes, {a: {"name": "slow_nic"}}), HGX, FABRIC.defaults)
    assert findings[a] and findings[b]
    assert "its partner is suspect too" in findings[b][0].message


def test_unreadable_pair_output_is_an_error_not_a_pass():
    verdicts = judge_fabric([PairResult("a", "b", "")], HGX, FABRIC.defaults)
    assert {v.verdict for v in verdicts.values()} == {Verdict.ERROR}


def test_each_pair_output_is_parsed_once(monkeypatch):
    # Parsing nccl-tests' tables is nearly all of judging a fabric gate; the localisation and
    # the verdicts share one parse of each output.
    pairs = run_pairs(rack(6), {})
    parsed = []
    real_parse = fabric.nccl.parse
    monkeypatch.setattr(fabric.nccl, "parse", lambda text: parsed.append(text) or real_parse(text))
    verdicts = judge_fabric(pairs, HGX, FABRIC.defaults)
    assert all(v.verdict == Verdict.PASS for v in verdicts.values())
    assert sorted(parsed) == sorted(p.output for p in pairs)
