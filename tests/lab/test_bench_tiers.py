"""Scale tiers: benchmark runs of several sizes compared, linear or not, and plotted (issue 32)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from lab.bench import throughput
from lab.bench_tiers import TiersRefused, compare_tiers, cores_busy_share


def bench_run(nodes: int, per_real_hour: float, cpu: float, *, speed=4.0, soak=1.0) -> dict:
    """The keys of a `manage.py bench` JSON that the tiers read."""
    return {
        "nodes": nodes,
        "commit": "c0ffee",
        "speed": speed,
        "soak_hours": soak,
        "throughput": {"per_real_hour": per_real_hour, "per_lab_hour": per_real_hour / speed},
        "cpu_s_per_node": cpu,
        "cpu_s_per_node_with_datastores": cpu * 1.4,
        "event_latency_ms": {"p50": 80.0, "p99": 240.0},
        "makespan_ratio": 1.04,
        "healthy_first_pass_rate": 1.0,
        "memory": {"peak_total_rss_mb": 900.0 + nodes / 10, "machine_available_min_mb": 60000.0},
    }


def test_throughput_counts_nodes_to_awaiting_approval_per_hour_of_the_makespan():
    # 740 nodes over two lab hours at speed 4: half a real hour.
    assert throughput(740, 7200.0, 4.0) == {
        "nodes_to_awaiting_approval": 740,
        "per_lab_hour": 370.0,
        "per_real_hour": 1480.0,
    }
    assert throughput(0, None, 4.0)["per_real_hour"] is None


def test_tiers_are_compared_with_the_smallest_and_judged_linear_within_a_fifth():
    table = compare_tiers(
        [
            ("5000.json", bench_run(5000, 1300.0, 0.95)),
            ("741.json", bench_run(741, 1480.0, 0.80)),
            ("2000.json", bench_run(2000, 1400.0, 0.85)),
        ]
    )
    assert [row["nodes"] for row in table["tiers"]] == [741, 2000, 5000]
    smallest, middle, largest = table["tiers"]
    assert smallest["throughput_vs_smallest"] == 1.0 and smallest["linear"]
    assert middle["throughput_vs_smallest"] == round(1400 / 1480, 3) and middle["linear"]
    # Throughput within a fifth (0.878) but CPU a node 19% up: still linear.
    assert largest["cpu_vs_smallest"] == round(0.95 / 0.80, 3) and largest["linear"]
    assert (table["speed"], table["soak_hours"], table["linear_within"]) == (4.0, 1.0, 0.2)


def test_a_tier_whose_throughput_falls_by_more_than_a_fifth_is_not_linear():
    table = compare_tiers([("a", bench_run(741, 1480.0, 0.8)), ("b", bench_run(5000, 1100.0, 0.8))])
    assert table["tiers"][1]["throughput_vs_smallest"] == round(1100 / 1480, 3)
    assert table["tiers"][1]["linear"] is False


def timed(run: dict, *, wall_s: float, lab: float, cpus: int = 2) -> dict:
    """A run with the figures that say how busy it kept the cores."""
    return {**run, "wall_s": wall_s, "lab_cpu_s_per_node": lab, "machine": {"cpus": cpus}}


def test_a_tier_that_left_the_cores_idle_is_named_bound_by_one_node_and_its_throughput_explained():
    # Session 30's 741 nodes at speed 4: 0.904 s a node with the datastores, the lab 0.278 s,
    # 2,167.8 real s on two cores: a fifth of the machine.
    idle = timed({**bench_run(741, 1210.7, 0.705), "cpu_s_per_node_with_datastores": 0.904},
                 wall_s=2167.8, lab=0.278)  # fmt: skip
    assert cores_busy_share(idle) == round((0.904 + 0.278) * 741 / (2167.8 * 2), 3) == 0.202
    full = timed({**bench_run(5000, 4000.0, 0.75), "cpu_s_per_node_with_datastores": 0.95},
                 wall_s=4000.0, lab=0.4)  # fmt: skip
    table = compare_tiers([("741", idle), ("5000", full)])
    smallest, largest = table["tiers"]
    assert (smallest["bound_by"], largest["bound_by"]) == ("one node", "cores")
    assert largest["cores_busy_share"] == round(1.35 * 5000 / 8000, 3)
    # The verdict stays the issue's: a rate 3.3 times the smallest's is not "within 20%".
    assert largest["linear"] is False
    assert "741-node tier kept the cores 20% busy and ended 1.04 times" in table["throughput_note"]
    # Two tiers that both fill the cores compare as they are, with nothing to explain.
    busy = timed(bench_run(741, 4100.0, 0.75), wall_s=700.0, lab=0.4)
    assert compare_tiers([("741", busy), ("5000", full)])["throughput_note"] is None
    # A JSON without the figures (older runs) says nothing about what bound it.
    untimed = compare_tiers([("a", bench_run(741, 1.0, 1)), ("b", bench_run(5000, 1.0, 1))])
    assert untimed["tiers"][0]["bound_by"] is None


@pytest.mark.parametrize(
    "runs, words",
    [
        ([("a.json", bench_run(741, 1480.0, 0.8))], "two or more"),
        (
            [
                ("a.json", bench_run(741, 1480.0, 0.8)),
                ("b.json", bench_run(5000, 900.0, 0.8, speed=1)),
            ],
            "b.json (speed 1, soak 1.0 h)",
        ),
        (
            [
                ("a.json", bench_run(741, 1480.0, 0.8)),
                ("b.json", {**bench_run(2000, 1, 1), "throughput": {}}),
            ],
            "no throughput in b.json",
        ),
        (
            [("a.json", bench_run(741, 1480.0, 0.8)), ("b.json", bench_run(741, 1400.0, 0.8))],
            "one size",
        ),
    ],
)
def test_runs_that_are_not_tiers_are_refused_saying_why(runs, words):
    with pytest.raises(TiersRefused, match=words.replace("(", r"\(").replace(")", r"\)")):
        compare_tiers(runs)


def run_tiers_command(tmp_path, runs: list[dict]) -> tuple[str, dict]:
    """`manage.py bench_tiers` over `runs` written as files: what it printed, and its table."""
    paths = []
    for run in runs:
        path = tmp_path / f"bench-{run['nodes']}.json"
        path.write_text(json.dumps(run))
        paths.append(str(path))
    out = io.StringIO()
    call_command(
        "bench_tiers", *paths, json=str(tmp_path / "tiers.json"), plot=str(tmp_path / "t.png"),
        stdout=out,
    )  # fmt: skip
    return out.getvalue(), json.loads((tmp_path / "tiers.json").read_text())


def test_the_command_writes_the_table_and_the_plot(tmp_path):
    printed, table = run_tiers_command(
        tmp_path, [bench_run(741, 1480.0, 0.8), bench_run(2000, 1420.0, 0.8)]
    )
    assert [row["nodes"] for row in table["tiers"]] == [741, 2000]
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "2000 nodes: 1420.0 a real hour (x0.959)" in printed
    assert "cores ? busy" in printed and "note:" not in printed


def test_the_command_prints_why_the_throughput_of_an_idle_smallest_tier_does_not_compare(tmp_path):
    runs = [
        timed(bench_run(nodes, rate, 0.7), wall_s=wall_s, lab=0.3)
        for nodes, rate, wall_s in ((741, 1210.7, 2167.8), (5000, 4000.0, 4000.0))
    ]
    printed, table = run_tiers_command(tmp_path, runs)
    assert "741 nodes: 1210.7 a real hour (x1.0), CPU 0.7 s a node (x1.0)" in printed
    assert "cores 22% busy" in printed
    assert "note: the 741-node tier kept the cores 22% busy" in printed
    assert table["throughput_note"].startswith("the 741")


def test_the_command_names_a_file_that_is_not_a_benchmark_json(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(CommandError, match="broken.json: not a benchmark JSON"):
        call_command("bench_tiers", str(broken), str(broken))
