"""A manifest's staged rules for a rack-scale system (issue 34): `rack_stages:` parsed in order,
the default when a manifest gives none, and every bad field named with its stage and line."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from fleet.documents import DocumentInvalid
from fleet.manifests import parse_manifest
from fleet.models import Manifest
from fleet.rack_stages import DEFAULT_RACK_STAGES, parse_duration, stages_of
from tests import factories

HEAD = 'sku: gb200-nvl72\nversion: "1.0.0"\n'
GOOD = (
    HEAD
    + """rack_stages:
  - kind: power_shelf
    max_parallel: 1
    verify: members_answer
    retries: 2
    time_limit: 30m
  - kind: switch_tray
    max_parallel: 3
    verify: fabric_formed
    retries: 1
    time_limit: 1h30m
  - kind: compute_tray
    max_parallel: 8
    verify: members_answer
    time_limit: 7200
  - kind: compute_tray
    action: power_cycle
    max_parallel: 18
    verify: none
    time_limit: 90s
"""
)


def _stage(**fields) -> str:
    """A manifest with one stage: a good compute stage with `fields` replaced (None drops one)."""
    stage = {
        "kind": "compute_tray",
        "max_parallel": "8",
        "verify": "members_answer",
        "retries": "1",
        "time_limit": "2h",
    }
    stage.update(fields)
    lines = [f"    {k}: {v}" for k, v in stage.items() if v is not None]
    lines[0] = "  - " + lines[0].lstrip()
    return HEAD + "rack_stages:\n" + "\n".join(lines) + "\n"


def _messages(text: str) -> list[str]:
    with pytest.raises(DocumentInvalid) as excinfo:
        parse_manifest(text)
    return excinfo.value.messages()


def test_stages_are_parsed_in_order_with_their_rules():
    stages = parse_manifest(GOOD).spec["rack_stages"]
    assert [(s["kind"], s["action"], s["max_parallel"]) for s in stages] == [
        ("power_shelf", "bring_up", 1),
        ("switch_tray", "bring_up", 3),
        ("compute_tray", "bring_up", 8),
        ("compute_tray", "power_cycle", 18),
    ]
    assert [s["verify"] for s in stages] == [
        "members_answer", "fabric_formed", "members_answer", "none",
    ]  # fmt: skip
    assert [s["retries"] for s in stages] == [2, 1, 0, 0]  # retries default to none
    assert [s["time_limit_s"] for s in stages] == [1800, 5400, 7200, 90]
    assert stages_of(parse_manifest(GOOD).spec) == stages


def test_a_manifest_without_stages_gets_the_default_order():
    spec = parse_manifest(HEAD).spec
    assert "rack_stages" not in spec
    stages = stages_of(spec)
    assert stages == [dict(s) for s in DEFAULT_RACK_STAGES]
    # Shelves one at a time, then the trays behind them must answer; switch trays three at a
    # time until the fabric forms; compute trays eight at a time; then their power cycle.
    assert [(s["kind"], s["max_parallel"], s["verify"]) for s in stages] == [
        ("power_shelf", 1, "members_answer"),
        ("switch_tray", 3, "fabric_formed"),
        ("compute_tray", 8, "members_answer"),
        ("compute_tray", 8, "members_answer"),
    ]
    assert stages[-1]["action"] == "power_cycle"


@pytest.mark.parametrize(
    ("fields", "named", "says"),
    [
        ({"kind": "gpu_tray"}, "rack_stages.0.kind", "unknown kind 'gpu_tray'"),
        ({"kind": None}, "rack_stages.0.kind", "is missing"),
        ({"action": "reflash"}, "rack_stages.0.action", "unknown action 'reflash'"),
        ({"max_parallel": "0"}, "rack_stages.0.max_parallel", "from 1 to 72, got 0"),
        ({"max_parallel": "'3'"}, "rack_stages.0.max_parallel", "got '3'"),
        ({"max_parallel": "true"}, "rack_stages.0.max_parallel", "got True"),
        ({"max_parallel": None}, "rack_stages.0.max_parallel", "got None"),
        ({"verify": "looks_fine"}, "rack_stages.0.verify", "unknown verify 'looks_fine'"),
        ({"verify": None}, "rack_stages.0.verify", "is missing"),
        ({"retries": "-1"}, "rack_stages.0.retries", "from 0 to 10, got -1"),
        ({"retries": "1.5"}, "rack_stages.0.retries", "got 1.5"),
        ({"time_limit": "soon"}, "rack_stages.0.time_limit", "'soon' is not a duration"),
        ({"time_limit": "0s"}, "rack_stages.0.time_limit", "is not a duration"),
        ({"time_limit": "9999h"}, "rack_stages.0.time_limit", "from 1s to 7 days"),
        ({"time_limit": None}, "rack_stages.0.time_limit", "is missing"),
        ({"parallel": "3"}, "rack_stages.0.parallel", "unknown field 'parallel'"),
    ],
)
def test_each_bad_field_is_named_with_its_stage_and_line(fields, named, says):
    text = _stage(**fields)
    messages = _messages(text)
    assert len(messages) == 1, messages
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "- kind" in t or "  - " in t)
    assert named in messages[0] and says in messages[0], messages
    assert int(messages[0].split(":")[0].removeprefix("line ")) >= line


@pytest.mark.parametrize(
    ("block", "says"),
    [
        ("rack_stages: []", "must be a non-empty list of stages"),
        ("rack_stages: power_shelf", "must be a non-empty list of stages"),
        ("rack_stages:\n  - power_shelf", "rack_stages.0: must be a mapping, got str"),
    ],
)
def test_a_stage_list_of_the_wrong_shape_is_named(block, says):
    messages = _messages(HEAD + block + "\n")
    assert any(says in m for m in messages), messages


def test_bring_up_stages_must_climb_shelves_then_switch_then_compute():
    text = (
        GOOD.replace("kind: switch_tray", "kind: SWAP")
        .replace("kind: power_shelf", "kind: switch_tray")
        .replace("kind: SWAP", "kind: power_shelf")
    )
    (message,) = _messages(text)
    assert "rack_stages.1.kind" in message
    assert "a power_shelf stage cannot follow a later kind's" in message
    assert "power_shelf, then switch_tray, then compute_tray" in message


def test_every_bad_stage_is_reported_at_once():
    text = _stage(kind="gpu_tray", max_parallel="0", time_limit="soon")
    fields = {m.split(": ")[1] for m in _messages(text)}
    assert fields == {
        "rack_stages.0.kind", "rack_stages.0.max_parallel", "rack_stages.0.time_limit",
    }  # fmt: skip


LAUGHS = "rack_stages:\n  - &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"  - &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdef", "bcdefg", strict=True)
)


@pytest.mark.parametrize(
    ("hostile", "says"),
    [
        # Billion laughs inside a stage: refused by the loader's alias budget, not expanded.
        (LAUGHS, "(limit: aliases)"),
        # Nested deeper than the loader allows.
        ("rack_stages: " + "[" * 200 + "]" * 200, "(limit: depth)"),
        # A huge max_parallel, a time limit that is a mapping: both named, nothing raised.
        (
            "rack_stages:\n  - kind: compute_tray\n    max_parallel: 99999999999999999999\n"
            "    verify: none\n    time_limit: {h: 1}\n",
            "rack_stages.0.max_parallel",
        ),
        # A tag PyYAML's safe loader refuses to construct.
        ("rack_stages:\n  - !!python/object/apply:os.system ['true']\n", "(syntax)"),
    ],
)
def test_hostile_yaml_stays_a_clear_error(hostile, says):
    messages = _messages(HEAD + hostile)
    assert messages and all(m.startswith("line ") for m in messages), messages
    assert any(says in m for m in messages), messages


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("1h 5s", 3605), (600, 600)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "5 minutes", "1.5h", True, None, [1]])
def test_not_durations(text):
    assert parse_duration(text) is None


@pytest.mark.django_db
def test_the_model_keys_stage_errors_to_the_yaml_field():
    factories.make_rack_sku()
    manifest = Manifest(yaml_text=_stage(verify="looks_fine"))
    with pytest.raises(ValidationError) as excinfo:
        manifest.full_clean()
    (message,) = excinfo.value.message_dict["yaml_text"]
    assert "rack_stages.0.verify: unknown verify 'looks_fine'" in message
