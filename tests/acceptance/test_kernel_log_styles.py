"""Every timestamp style real kernel logs come in is recognised, on lines taken from them."""

import pytest

from acceptance.parsers import xid

from .sample_files import SAMPLES

REAL = SAMPLES / "real"


@pytest.mark.parametrize(
    "name,style,stamp",
    [
        ("kern_bumblebee554_gpu_at_fallen_off_bus.log", "relative", "49.261458"),
        ("gpud_kern_ctime_xid119.log", "ctime", "Sun Feb 23 16:24:18 2025"),
        ("gpud_kern_iso_xid48_63_94.log", "iso", "2024-11-15T05:39:15,491363+00:00"),
        ("gpud_kern_journal_short_iso_clean.log", "iso", "2025-01-17T17:10:43+0000"),
        ("sxid_gpud338_dmesg_iso_12028.log", "iso", "2025-01-25T10:34:54,859532+00:00"),
        ("aer_lkml_latitude_syslog_corrected_nvme.log", "syslog", "Jan  1 23:30:53"),
        ("gpud_kmsg_nvswitch.log", "kmsg", "206764307"),
        ("kern_ogkm1150_xid45_caused_by_previous_xid.log", "none", ""),
    ],
)
def test_the_first_line_of_each_real_log_gives_its_style(name, style, stamp):
    first = (REAL / name).read_text().splitlines()[0]
    assert xid.timestamp(first) == (style, stamp)


def test_events_carry_their_time_as_the_log_wrote_it():
    events = xid.parse((REAL / "gpud_kern_ctime_xid119.log").read_text()).metrics["events"]
    assert (events[0]["time_style"], events[0]["time"]) == ("ctime", "Sun Feb 23 16:24:18 2025")
    relative = xid.parse((REAL / "kern_bumblebee554_gpu_at_fallen_off_bus.log").read_text())
    assert relative.metrics["events"][0]["time_s"] == 49.261458
