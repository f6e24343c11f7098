"""The fabric gate across a rack: pair nodes, run all_reduce per pair, and blame only the bad node.

A node with a slow NIC drags down every pair it is in; its partners are fast with everyone else.
So a node is blamed when every pair it is in is slow, and cleared by any fast pair. The plan puts
each node in at least two pairs with different partners, so a single bad node stands out.

A pair is measured by nccl-tests (bus bandwidth against the NICs' line rate) or, on nodes without
NCCL, by perftest's ib_write_bw on one rail (average bandwidth against one NIC's line rate, held
to its own floor: a raw RDMA write gets closer to line rate than a collective does).
"""

from __future__ import annotations

from dataclasses import dataclass

from .choices import Verdict
from .parsers import nccl, perftest
from .parsers.base import Finding, Severity
from .verdicts import GateVerdict, SkuFacts, conclude


@dataclass(frozen=True)
class PairResult:
    """One all_reduce_perf run between two nodes of a rack."""

    node_a: str
    node_b: str
    output: str
    # "NIC 0" when only that NIC of each node carried traffic (NCCL_IB_HCA=mlx5_0); None for all.
    rail: str | None = None
    # The tool that measured the pair: "nccl" (all_reduce_perf) or "perftest" (ib_write_bw).
    tool: str = "nccl"


def plan_fabric_pairs(node_ids: list[str]) -> list[tuple[str, str]]:
    """Pairs to test: a ring (two partners each), plus skip-one chords from five nodes up.

    The chords give every node four different partners, so a good node sitting between two bad
    ones in the ring still has fast pairs that clear it.
    """
    nodes = sorted(dict.fromkeys(node_ids))
    n = len(nodes)
    if n < 2:
        return []
    if n == 2:
        return [(nodes[0], nodes[1])]
    pairs: list[tuple[str, str]] = []
    seen: set[frozenset[str]] = set()
    steps = (1, 2) if n >= 5 else (1,)
    for step in steps:
        for i in range(n):
            pair = (nodes[i], nodes[(i + step) % n])
            if frozenset(pair) not in seen:
                seen.add(frozenset(pair))
                pairs.append(pair)
    return pairs


# A lone pair cannot say which of its two nodes is slow: a node gets two partners when it can.
PARTNERS_WANTED = 2


@dataclass(frozen=True)
class FabricPartners:
    """Whom a node runs NCCL with: peers brought up with it, and idle in-service nodes borrowed
    for the length of the gate when the peers are too few."""

    peers: tuple[str, ...]
    borrowed: tuple[str, ...]

    @property
    def all(self) -> list[str]:
        return [*self.peers, *self.borrowed]


def choose_partners(node_id: str, peers: list[str], spare: list[str]) -> FabricPartners:
    """The node's partners: its pairs in the plan over itself and `peers` (healthy nodes of the
    rack going through the pipeline with it), topped up to two from `spare` (healthy in-service
    nodes no tenant holds). A node alone in its pipeline, as on a tenant release, borrows both.
    """
    planned = sorted(
        {
            b if a == node_id else a
            for a, b in plan_fabric_pairs([node_id, *peers])
            if node_id in (a, b)
        }
    )
    room = max(0, PARTNERS_WANTED - len(planned))
    borrowed = [s for s in sorted(dict.fromkeys(spare)) if s != node_id and s not in planned]
    return FabricPartners(tuple(planned), tuple(borrowed[:room]))


def localise_fabric(
    pair_results: list[PairResult], sku: SkuFacts, used: dict[str, float]
) -> dict[str, list[Finding]]:
    """Findings per node id: only nodes whose every pair (per rail) was slow are named.

    `used` is the fabric gate's thresholds with its defaults (acceptance.gates.FABRIC).
    """
    return _localised(pair_results, _outcomes(pair_results, sku), used)


def _localised(
    pair_results: list[PairResult], outcomes: list[dict], used: dict[str, float]
) -> dict[str, list[Finding]]:
    findings: dict[str, list[Finding]] = {}
    for result in pair_results:
        findings.setdefault(result.node_a, [])
        findings.setdefault(result.node_b, [])
    for (node, rail), pairs in _by_node_and_rail(outcomes).items():
        fractions = [o["fraction"] for o in pairs if o["fraction"] is not None]
        perftest_only = all(o["tool"] == "perftest" for o in pairs)
        floor = used["min_rail_fraction" if perftest_only else "min_busbw_fraction"]
        if not fractions or max(fractions) >= floor:
            continue
        part = rail or "fabric"
        partners = ", ".join(
            f"{o['partner']} {o['fraction']:.0%}" for o in pairs if o["fraction"] is not None
        )
        lone = "; the only pair, so its partner is suspect too" if len(fractions) == 1 else ""
        measure = "ib_write_bw" if perftest_only else "busbw"
        message = (
            f"{part}: {measure} {max(fractions):.0%} of line rate or less in every pair "
            f"({partners}){lone}"
        )
        code = "rail_slow" if perftest_only else "nccl_slow"
        findings[node].append(Finding(part, "nic", message, Severity.CRITICAL, code))
    return findings


def judge_fabric(
    pair_results: list[PairResult], sku: SkuFacts, used: dict[str, float]
) -> dict[str, GateVerdict]:
    """A fabric verdict per node: fail if localised, error if none of its pairs could be read."""
    # Each output parsed once, for the localisation and the verdicts alike: parsing nccl-tests'
    # tables is nearly all of judging (9% of a worker's CPU while a 150-node benchmark's fabric
    # gates ran), and it was done twice.
    outcomes = _outcomes(pair_results, sku)
    localised = _localised(pair_results, outcomes, used)
    verdicts: dict[str, GateVerdict] = {}
    for node, findings in localised.items():
        mine = [o for o in outcomes if node in (o["a"], o["b"])]
        verdict = GateVerdict(Verdict.ERROR, findings=list(findings), thresholds_used=used)
        verdict.metrics = {
            "pairs": [
                {k: o[k] for k in ("a", "b", "rail", "fraction", "plateau_gbps", "error")}
                for o in mine
            ]
        }
        verdict.tool_versions = {
            o["tool"]: o["version"] or "" for o in sorted(mine, key=lambda o: bool(o["version"]))
        }
        if all(o["error"] for o in mine):
            verdict.error = "; ".join(sorted({o["error"] for o in mine}))
        verdicts[node] = conclude(verdict)
    return verdicts


def _outcomes(pair_results: list[PairResult], sku: SkuFacts) -> list[dict]:
    outcomes = []
    for result in pair_results:
        if result.tool == "perftest":
            parsed = perftest.parse(result.output)
            # perftest reports Gb/s on one NIC; the plateau is kept in GB/s like NCCL's busbw.
            gbits = parsed.metrics.get("avg_gbps_at_max_size") if parsed.ok else None
            plateau = gbits / 8 if gbits is not None else None
            reference = sku.fabric_gbytes(1)
        else:
            parsed = nccl.parse(result.output)
            reference = sku.fabric_gbytes(1 if result.rail else None)
            plateau = parsed.metrics.get("plateau_busbw_gbps") if parsed.ok else None
        outcomes.append(
            {
                "a": result.node_a,
                "b": result.node_b,
                "rail": result.rail,
                "tool": result.tool,
                "plateau_gbps": plateau,
                "fraction": round(plateau / reference, 4) if plateau is not None else None,
                "error": parsed.error,
                "version": parsed.version,
            }
        )
    return outcomes


def _by_node_and_rail(outcomes: list[dict]) -> dict[tuple[str, str | None], list[dict]]:
    grouped: dict[tuple[str, str | None], list[dict]] = {}
    for o in outcomes:
        grouped.setdefault((o["a"], o["rail"]), []).append({**o, "partner": o["b"]})
        grouped.setdefault((o["b"], o["rail"]), []).append({**o, "partner": o["a"]})
    return grouped
