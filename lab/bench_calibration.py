"""One node's uncontended lab time, kept with the commit it was measured on (issue 32).

A benchmark's makespan ratio means something only against the pipeline being measured: a
calibration of another commit, speed or soak is refused, naming what differs, and a tree with
uncommitted changes is nobody's commit, so its calibration is never reused.
"""

from __future__ import annotations

import json
import statistics
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from .run import LabRunConfig

REPO = Path(__file__).resolve().parent.parent


class CalibrationRefused(ValueError):
    """The stored calibration is not of the pipeline about to be measured."""


@dataclass(frozen=True)
class Calibration:
    commit: str
    speed: float
    soak_hours: float
    single_node_lab_s: float


def current_commit() -> str:
    """HEAD's sha, with "-dirty" when tracked files differ from it; "" outside a checkout."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f"{sha}-dirty" if changed else sha


def single_node_lab_s(calibration_pass: dict, timeout_s: float) -> float:
    """One node's uncontended lab time from a calibration rack's pass (LabRun.run_pass): the
    median of its nodes. Refused when the pass did not finish: a node still running has no end,
    and a calibration of 0.1 lab s was once stored from a rack stopped by --timeout."""
    if not calibration_pass["finished"]:
        raise CalibrationRefused(
            f"the calibration rack did not finish within --timeout {timeout_s:g} real s "
            f"({len(calibration_pass['nodes'])} nodes, one node takes about its lab time over "
            "--speed): nothing stored; give the run a longer --timeout"
        )
    return statistics.median(node["lab_seconds"] for node in calibration_pass["nodes"])


def save(path: Path, config: LabRunConfig, single_node_lab_s: float, commit: str) -> Calibration:
    """Write the calibration just measured beside the benchmark's JSON; `commit` is the one
    read when its processes started (current_commit), not when it ended."""
    calibration = Calibration(commit, config.speed, config.soak_hours, single_node_lab_s)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(calibration), indent=2))
    return calibration


def load(path: Path, config: LabRunConfig) -> Calibration:
    """The calibration stored at `path` if it is of this commit, speed and soak."""
    try:
        stored = Calibration(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError) as exc:
        raise CalibrationRefused(
            f"{path}: not a calibration this benchmark wrote ({exc})"
        ) from None
    commit = current_commit()
    if not commit or commit.endswith("-dirty"):
        raise CalibrationRefused(
            "this tree has uncommitted changes (or is not a git checkout): calibrate it afresh"
        )
    differs = [
        f"{name} {mine!r} here, {theirs!r} in {path}"
        for name, mine, theirs in (
            ("commit", commit, stored.commit),
            ("speed", config.speed, stored.speed),
            ("soak_hours", config.soak_hours, stored.soak_hours),
        )
        if mine != theirs
    ]
    if differs:
        raise CalibrationRefused("calibration of another pipeline: " + "; ".join(differs))
    return stored
