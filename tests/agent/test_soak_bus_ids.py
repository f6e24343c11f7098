"""The soak names a GPU in an XID line by the bus id the node reported, not by a table."""

from __future__ import annotations

import pytest

from acceptance.parsers import xid
from acceptance.soak_runner import bus_ids
from agent.soak_telemetry import soak_sample
from fleet.models import Component
from tests.factories import make_node

# One line of the soak's nvidia-smi query per GPU (index, temperature, power, SM clock, clock
# event reasons, bus id) for a node whose GPUs sit on buses unlike any HGX table.
SAMPLE = (
    "0, 41, 310.52, 1980, 0x0000000000000000, 00000000:1B:00.0\n"
    "1, 43, 305.11, 1980, 0x0000000000000004, 00000000:43:00.0\n"
)


@pytest.mark.django_db
def test_an_xid_names_the_gpu_by_the_bus_id_the_node_reported():
    node = make_node("SOAK-1")
    for index, serial in ((0, "1654922000101"), (1, "1654922000102")):
        Component.objects.create(node=node, kind="gpu", slot=f"GPU {index}", serial=serial)
    samples = [{"index": 0, "t": 0, "gpus": soak_sample(SAMPLE)}]
    assert samples[0]["gpus"][1]["clocks_event_reasons"] == ["sw_power_cap"]
    found = bus_ids(node, samples)
    assert found == {
        "0000:1b:00.0": {"index": 0, "serial": "1654922000101"},
        "0000:43:00.0": {"index": 1, "serial": "1654922000102"},
    }
    line = "[ 9001.000001] NVRM: Xid (PCI:0000:43:00): 79, pid=1, name=gpu_burn, GPU has fallen off the bus.\n"
    [finding] = xid.parse(line, bus_ids=found).findings
    assert (finding.part, finding.part_serial) == ("GPU 1", "1654922000102")


@pytest.mark.django_db
def test_samples_without_bus_ids_name_no_gpu_from_a_table():
    node = make_node("SOAK-2")
    Component.objects.create(node=node, kind="gpu", slot="GPU 0", serial="S0")
    assert bus_ids(node, [{"index": 0, "t": 0, "gpus": [{"gpu": 0, "temp_c": 40}]}]) == {}


def test_a_gpu_that_stops_answering_is_reported_lost_not_dropped():
    seen: dict[str, int] = {}
    first = soak_sample(SAMPLE, seen)
    assert [g["gpu"] for g in first] == [0, 1]
    # The driver's words for a GPU off the bus (as a public bug report quotes them), with GPU 0
    # still answering.
    later = soak_sample(
        "0, 44, 301.00, 1980, 0x0000000000000000, 00000000:1B:00.0\n"
        "Unable to determine the device handle for GPU1: 0000:43:00.0: Unknown Error\n",
        seen,
    )
    assert later[1] == {"gpu": 1, "lost": True, "bus_id": "0000:43:00.0"}
