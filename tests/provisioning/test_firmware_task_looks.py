"""A BMC's firmware update task is looked at when its progress says it should be done."""

from __future__ import annotations

import pytest

from provisioning.core.phases.oob import (
    TASK_LOOK_MAX_S,
    TASK_LOOK_MIN_S,
    TASK_LOOK_S,
    next_task_look_s,
)


@pytest.mark.parametrize(
    ("elapsed_s", "percent", "look_s"),
    [
        (60, None, TASK_LOOK_S),  # a BMC that reports no progress: once a minute
        (60, 0, TASK_LOOK_S),
        (300, 50, 300),  # half done in five minutes: five more
        (540, 90, 60),
        (600, 99, TASK_LOOK_MIN_S),  # nearly done: soon, but not in a tight loop
        (60, 5, TASK_LOOK_MAX_S),  # a slow start never pushes the look past five minutes
    ],
)
def test_the_next_look_is_at_the_end_the_progress_predicts(elapsed_s, percent, look_s):
    assert next_task_look_s(elapsed_s, percent) == pytest.approx(look_s)
