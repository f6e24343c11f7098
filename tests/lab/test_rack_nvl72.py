"""`manage.py lab run --rack-scale nvl72` (issue 34): a healthy GB200 NVL72 lab rack, its 8 power
shelves, 9 NVLink switch trays and 18 compute trays each behind its own lab BMC, brought to
awaiting approval by the staged rules through the real processes, twice.

Pass one: the stages run in order at their parallelism (the most members in flight at once
reaches each stage's max_parallel, never more), every member's run succeeds, and the rack-wide
gate passes over the 72 GPUs. Pass two over the same rack: every firmware phase of every member
is skipped, no lab BMC accepts another update, and no compute tray is power-cycled.
"""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from fleet.choices import RackState


# The full rack through real processes, twice: minutes on a busy 2-core machine.
@pytest.mark.timeout(2400)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_lab_nvl72_comes_up_by_the_staged_rules_then_a_second_pass_flashes_nothing(tmp_path):
    out = tmp_path / "nvl72.json"
    call_command(
        "lab", "run", "--rack-scale", "nvl72", "--passes", "2", "--speed", "400",
        "--soak-hours", "0.25", "--timeout", "900", "--json", str(out),
    )  # fmt: skip
    passes = json.loads(out.read_text())["passes"]
    assert len(passes) == 2, passes[-1]["last_error"] or passes[-1]["stages"]
    first, second = passes

    for result in (first, second):
        assert result["finished"] and result["status"] == "succeeded", result["last_error"]
        assert result["rack_state"] == RackState.AWAITING_APPROVAL
        assert [(s["kind"], s["action"], s["max_parallel"], s["members"], s["status"])
                for s in result["stages"]] == [
            ("power_shelf", "bring_up", 1, 8, "done"),
            ("switch_tray", "bring_up", 3, 9, "done"),
            ("compute_tray", "bring_up", 8, 18, "done"),
            ("compute_tray", "power_cycle", 8, 18, "done"),
        ]  # fmt: skip
        assert result["verdict"]["verdict"] == "pass", result["verdict"]["summary"]
        assert result["verdict"]["metrics"]["gpus_in_domain"] == 72
        assert len(result["members"]) == 35
        assert all(m["run_status"] == "succeeded" for m in result["members"])
        # Bring-up stages reach their parallelism and never pass it.
        peaks = [s["peak_parallel"] for s in result["stages"]]
        assert peaks[:3] == [1, 3, 8], result["stages"]

    # Pass one flashed every member (the BMC bundle of each device, six parts of each tray),
    # then cycled the compute trays eight at a time to activate what they staged.
    assert all(m["firmware_done"] >= 1 for m in first["members"]), first["members"]
    assert first["stages"][3]["peak_parallel"] == 8 and first["stages"][3]["skipped_cycles"] == 0
    # Pass two: every firmware step skipped, no BMC took an update, no tray cycled.
    flashes = {m["serial"]: m["bmc_flashes"] for m in first["members"]}
    for member in second["members"]:
        assert member["firmware_done"] == 0 and member["firmware_skipped"] >= 1, member
        assert member["bmc_flashes"] == flashes[member["serial"]], member
    assert second["stages"][3]["skipped_cycles"] == 18
    print(f"NVL72 lab rack: pass one {first['wall_s']} s, pass two {second['wall_s']} s")
