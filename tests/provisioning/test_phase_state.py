"""The typed workflow state phases keep in their records: what is written is what is read back,
a record written before a key existed reads as the default, and other keys are kept."""

from __future__ import annotations

from provisioning.core.phase_state import (
    FirmwarePush,
    Flash,
    FlashedDevices,
    GpuResets,
    PowerOnRequests,
    SoakState,
)

DRIFT = {"drift": [{"component": "BMC", "expected": "2.1", "actual": "2.0", "matched": False}]}


def test_each_state_reads_back_what_it_wrote_and_keeps_what_observe_saw():
    states = [
        PowerOnRequests(3),
        FirmwarePush("2.0", ("/redfish/v1/TaskService/Tasks/1",), 40),
        FlashedDevices((Flash("mlx5_0", "28.39.1002", "28.40.1000"),)),
        GpuResets(("GPU 3",)),
    ]
    for state in states:
        kept = state.into(DRIFT)
        assert type(state).of(kept) == state
        assert kept["drift"] == DRIFT["drift"]
    soak = SoakState(soaked_s=600, chunk_end_s=1200, wanted_s=3600)
    assert SoakState.of(soak.as_json()) == soak


def test_a_record_from_before_a_key_existed_reads_as_the_default():
    assert PowerOnRequests.of({}) == PowerOnRequests(1)
    assert FirmwarePush.of(None) == FirmwarePush("", None, None)
    assert FlashedDevices.of(DRIFT).flashed == ()
    assert GpuResets.of({"gpus_reset": None}).parts == ()
    assert SoakState.of({}) == SoakState()


def test_a_push_written_again_without_its_task_list_drops_the_old_one():
    pushed = FirmwarePush("2.0", ("t1",)).into(DRIFT)
    resumed = FirmwarePush(FirmwarePush.of(pushed).from_version).into(pushed)
    assert "tasks_before" not in resumed
    assert FirmwarePush.of(resumed).from_version == "2.0"


def test_the_agents_flash_report_becomes_the_phases_changes():
    flashed = FlashedDevices.from_agent([{"device": "nvme0", "from": "1.0", "to": "1.1"}])
    assert [f.as_change() for f in flashed.flashed] == [
        {"component": "nvme0", "from": "1.0", "to": "1.1"}
    ]
