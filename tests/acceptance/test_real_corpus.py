"""Every real tool output in samples/real/ gives, through `manage.py gate_parse`, the truth read
from the output itself and written in samples/real/index.json (with the source of each)."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

REAL = Path(__file__).parent / "samples" / "real"
INDEX = json.loads((REAL / "index.json").read_text())


def gate_parse(tool: str, name: str) -> dict:
    out = StringIO()
    try:
        call_command("gate_parse", tool, str(REAL / name), stdout=out)
    except CommandError:
        pass  # an unreadable output exits non-zero; its JSON still says why
    return json.loads(out.getvalue())


def verdict_of(payload: dict) -> str:
    if payload["error"]:
        return "error"
    if any(f["severity"] == "critical" for f in payload["findings"]):
        return "fail"
    return "pass"


def test_the_corpus_is_real_and_broad():
    assert len(INDEX) >= 40
    assert {e["file"] for e in INDEX} | {"index.json"} == {p.name for p in REAL.iterdir()}
    assert all(e["source"] for e in INDEX)
    verdicts = {e["verdict"] for e in INDEX}
    assert verdicts == {"pass", "fail", "error"}


@pytest.mark.parametrize("entry", INDEX, ids=[e["file"] for e in INDEX])
def test_gate_parse_gives_the_truth(entry):
    payload = gate_parse(entry["tool"], entry["file"])
    assert verdict_of(payload) == entry["verdict"], payload["error"] or payload["findings"]
    if "error_contains" in entry:
        assert entry["error_contains"] in payload["error"]
    for key in ("version", "driver_version"):
        if key in entry:
            assert payload[key] == entry[key]
    for key, value in entry.get("metrics", {}).items():
        assert payload["metrics"][key] == value, key
    # Per-GPU facts, by index: a report of eight GPUs need not be written out whole.
    for index, facts in entry.get("gpus", {}).items():
        by_index = {gpu["index"]: gpu for gpu in payload["metrics"]["gpus"]}
        for key, value in facts.items():
            assert by_index[int(index)][key] == value, (index, key)
    critical = {f["part"] for f in payload["findings"] if f["severity"] == "critical"}
    assert critical == set(entry.get("parts", [])), payload["findings"]
    warned = {f["part"] for f in payload["findings"] if f["severity"] == "warning"}
    assert warned >= set(entry.get("warnings", []))
    for code in entry.get("codes", []):
        assert code in {f["code"] for f in payload["findings"]}
    if "message_contains" in entry:
        assert any(entry["message_contains"] in f["message"] for f in payload["findings"])
