"""A manifest's staged rules for a rack-scale system (`rack_stages:`), and their default.

A rack comes up in stages, in order: each stage names its member `kind`, what it does to each
member (`action`), how many members at once (`max_parallel`), what must hold before the next
stage (`verify`), how often a failed member is retried (`retries`) and how long the stage may
take (`time_limit`). The rack run (provisioning.rack) reads the parsed list, never the YAML.
"""

from __future__ import annotations

import re
from typing import Any

from .choices import MEMBER_KINDS, StageAction, StageVerify
from .documents import SchemaChecker

MAX_PARALLEL = 72
MAX_RETRIES = 10
MAX_TIME_LIMIT_S = 7 * 24 * 3600
STAGE_KEYS = {"kind", "action", "max_parallel", "verify", "retries", "time_limit"}
DURATION = re.compile(r"^(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?$")
# Bring-up stages must climb this order: compute trays powered before the fabric formed trip
# the shelves (NVIDIA's GB200 NVL72 bring-up order: shelves, switch trays, compute trays).
KIND_ORDER = {str(kind): rank for rank, kind in enumerate(MEMBER_KINDS)}


def _stage(kind, action, max_parallel, verify, retries, time_limit_s) -> dict[str, Any]:
    return {
        "kind": str(kind),
        "action": str(action),
        "max_parallel": max_parallel,
        "verify": str(verify),
        "retries": retries,
        "time_limit_s": time_limit_s,
    }


_BRING_UP, _CYCLE = StageAction.BRING_UP, StageAction.POWER_CYCLE
# The default when a manifest gives none (issue 34): power shelves one at a time, then check the
# trays behind them answer; switch trays three at a time so the fabric forms; compute trays
# eight at a time. Each member's run flashes its firmware in that order (shelves, switch trays,
# compute trays); a forced compute power cycle then activates what the trays staged.
DEFAULT_RACK_STAGES: tuple[dict[str, Any], ...] = (
    _stage("power_shelf", _BRING_UP, 1, StageVerify.MEMBERS_ANSWER, 2, 1800),
    _stage("switch_tray", _BRING_UP, 3, StageVerify.FABRIC_FORMED, 2, 3600),
    _stage("compute_tray", _BRING_UP, 8, StageVerify.MEMBERS_ANSWER, 1, 4 * 3600),
    _stage("compute_tray", _CYCLE, 8, StageVerify.MEMBERS_ANSWER, 1, 1800),
)


def stages_of(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The rack stages a parsed manifest declares, or the default."""
    declared = spec.get("rack_stages")
    return [dict(stage) for stage in (declared or DEFAULT_RACK_STAGES)]


def parse_duration(value: Any) -> int | None:
    """Seconds from a whole number of seconds or a duration like "90s", "30m", "2h", "1h30m";
    None if it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    match = DURATION.match(value.strip())
    if not match or not any(match.groups()):
        return None
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


def _whole(check: SchemaChecker, block: dict, key: str, path: tuple, low: int, high: int, default):
    value = block.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        check.error(path + (key,), f"must be a whole number from {low} to {high}, got {value!r}")
        return None
    return value


def _choice(check: SchemaChecker, block: dict, key: str, path: tuple, allowed, default=None):
    value = block.get(key, default)
    names = [str(a) for a in allowed]
    if value is None:
        check.error(path + (key,), f"is missing; expected one of {', '.join(names)}")
        return None
    if not isinstance(value, str) or value not in names:
        check.error(path + (key,), f"unknown {key} {value!r}; expected one of {', '.join(names)}")
        return None
    return value


def _one_stage(check: SchemaChecker, item: Any, path: tuple) -> dict[str, Any] | None:
    block = check.mapping(item, path)
    if block is None:
        return None
    check.unknown_keys(block, STAGE_KEYS, path)
    kind = _choice(check, block, "kind", path, MEMBER_KINDS)
    action = _choice(check, block, "action", path, StageAction.values, StageAction.BRING_UP)
    max_parallel = _whole(check, block, "max_parallel", path, 1, MAX_PARALLEL, None)
    verify = _choice(check, block, "verify", path, StageVerify.values)
    retries = _whole(check, block, "retries", path, 0, MAX_RETRIES, 0)
    limit = parse_duration(block.get("time_limit"))
    if "time_limit" not in block:
        check.error(path + ("time_limit",), 'is missing; a duration like "30m" or "2h"')
    elif limit is None or not 1 <= limit <= MAX_TIME_LIMIT_S:
        check.error(
            path + ("time_limit",),
            f'{block["time_limit"]!r} is not a duration from 1s to 7 days ("90s", "30m", '
            '"2h", "1h30m" or whole seconds)',
        )
        limit = None
    values = (kind, action, max_parallel, verify, retries, limit)
    if any(v is None for v in values):
        return None
    return _stage(*values)


def parse_rack_stages(check: SchemaChecker, value: Any) -> list[dict[str, Any]] | None:
    """Validate `rack_stages:`; every error names its stage and field."""
    path = ("rack_stages",)
    if not isinstance(value, list) or not value:
        check.error(path, "must be a non-empty list of stages")
        return None
    stages = [_one_stage(check, item, path + (index,)) for index, item in enumerate(value)]
    if any(stage is None for stage in stages):
        return None
    parsed: list[dict[str, Any]] = [s for s in stages if s is not None]
    highest = -1
    for index, stage in enumerate(parsed):
        if stage["action"] != StageAction.BRING_UP:
            continue
        rank = KIND_ORDER[stage["kind"]]
        if rank < highest:
            check.error(
                path + (index, "kind"),
                f"a {stage['kind']} stage cannot follow a later kind's: bring-up goes "
                + ", then ".join(KIND_ORDER),
            )
            return None
        highest = rank
    return parsed
