"""A calibration is reused only by the pipeline it measured (issue 32)."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import CommandError, call_command

from lab import bench_calibration
from lab.bench_calibration import CalibrationRefused, load, save, single_node_lab_s
from lab.run import LabRunConfig

SHA = "0123456789abcdef0123456789abcdef01234567"


def _config(**kw) -> LabRunConfig:
    return LabRunConfig(**{"nodes": 5, "speed": 4.0, "soak_hours": 1.0, **kw})


def test_one_node_is_the_median_of_a_finished_calibration_rack():
    nodes = [{"lab_seconds": s} for s in (8310.0, 8290.5, 8303.8, 8400.0, 8301.0)]
    assert single_node_lab_s({"finished": True, "nodes": nodes}, 7200) == 8303.8


def test_a_calibration_rack_stopped_by_the_time_limit_is_no_calibration():
    # What the lab reports of a node still in its burn-in when --timeout passed (session 31).
    nodes = [{"lab_seconds": 0.1, "final_state": "provisioning"}] * 5
    with pytest.raises(CalibrationRefused, match=r"did not finish within --timeout 1800 real s"):
        single_node_lab_s({"finished": False, "nodes": nodes}, 1800)


def test_the_commit_is_read_from_this_checkout():
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", bench_calibration.current_commit())


def test_a_calibration_of_this_commit_speed_and_soak_is_reused(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_calibration, "current_commit", lambda: SHA)
    path = tmp_path / "calibration.json"
    save(path, _config(), 8357.0, SHA)
    assert json.loads(path.read_text())["commit"] == SHA
    assert load(path, _config()).single_node_lab_s == 8357.0


def test_a_calibration_keeps_the_commit_its_processes_started_on(tmp_path, monkeypatch):
    # The tree moved on (a commit, an edit) while the calibration rack ran: it measured SHA.
    monkeypatch.setattr(bench_calibration, "current_commit", lambda: f"{'f' * 40}-dirty")
    path = tmp_path / "calibration.json"
    assert save(path, _config(), 8357.0, SHA).commit == SHA
    assert json.loads(path.read_text())["commit"] == SHA


@pytest.mark.parametrize(
    ("now", "config", "words"),
    [
        ("f" * 40, _config(), "commit"),
        (SHA, _config(speed=10.0), "speed 10.0 here, 4.0"),
        (SHA, _config(soak_hours=0.25), "soak_hours"),
        (f"{SHA}-dirty", _config(), "uncommitted changes"),
        ("", _config(), "not a git checkout"),
    ],
)
def test_a_calibration_of_another_pipeline_is_refused_naming_why(
    tmp_path, monkeypatch, now, config, words
):
    path = tmp_path / "calibration.json"
    save(path, _config(), 8357.0, SHA)
    monkeypatch.setattr(bench_calibration, "current_commit", lambda: now)
    with pytest.raises(CalibrationRefused, match=words):
        load(path, config)


def test_the_command_refuses_before_running_anything(tmp_path):
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"commit": "f" * 40, "speed": 4.0, "soak_hours": 1.0,
                                "single_node_lab_s": 1.0}))  # fmt: skip
    with pytest.raises(CommandError, match="calibration|uncommitted"):
        call_command("bench", nodes=2, calibration=str(path), reuse_calibration=True,
                     json=str(tmp_path / "bench.json"))  # fmt: skip
    assert not (tmp_path / "bench.json").exists()
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    with pytest.raises(CommandError, match="not a calibration"):
        call_command("bench", calibration=str(garbage), reuse_calibration=True)
