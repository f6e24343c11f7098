"""The benchmark's live watcher's file: a torn line costs that line, not the run's results."""

from __future__ import annotations

import json

import pytest

from lab.bench import LiveWatcher

pytestmark = pytest.mark.django_db


def test_a_line_that_is_not_json_is_counted_and_the_rest_read(tmp_path):
    out = tmp_path / "live-batches.jsonl"
    batch = {"at": 1.5, "batch": {"events": [7]}}
    # Two writers on one file (a stopped run's watcher left running) tore a line in session 31.
    out.write_text(
        json.dumps(batch) + "\n" + '{"at": 2.0, "bat{"at": 2.1, "closed": 1}\n'
        + json.dumps({"at": 3.0, "closed": 1000}) + "\n"
    )  # fmt: skip
    watcher = LiveWatcher("http://127.0.0.1:1", [], out)
    watcher.stop_watching()  # never started: nothing to stop
    watcher.read()
    assert watcher.received == [(1.5, {"events": [7]})]
    assert (watcher.disconnects, watcher.unreadable_lines) == (1, 1)
