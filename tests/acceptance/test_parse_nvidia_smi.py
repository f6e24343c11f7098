"""nvidia-smi -q -x: SwPowerCap is normal at load; hardware and thermal slowdowns are not."""

import pytest

from acceptance.parsers import nvidia_smi
from acceptance.parsers.base import Severity

from .sample_files import read


def test_idle_node_identity_and_health():
    result = nvidia_smi.parse(read("nvidia_smi_idle_pass.xml"))
    assert result.error is None
    assert result.driver_version == "550.90.07"
    gpu = result.metrics["gpus"][1]
    assert gpu["index"] == 1
    assert gpu["serial"] == "1654923004478"
    assert gpu["uuid"] == "GPU-2b7e9d10-4c3a-8e1f-65b2-9a0d7c3e1f48"
    assert gpu["bus_id"] == "00000000:2a:00.0"
    assert gpu["ecc_volatile_uncorrectable"] == 0
    assert gpu["remapped_rows_pending"] is False
    assert gpu["temp_c"] == 31.0 and gpu["power_w"] == 71.82
    assert result.findings == []


def test_sw_power_cap_at_full_load_is_not_a_finding():
    result = nvidia_smi.parse(read("nvidia_smi_load_swpowercap.xml"))
    assert all("sw_power_cap" in g["clock_reasons_active"] for g in result.metrics["gpus"])
    assert result.findings == []


def test_hw_slowdown_and_power_brake_are_findings_on_that_gpu():
    result = nvidia_smi.parse(read("nvidia_smi_load_hw_slowdown.xml"))
    assert {f.part for f in result.findings} == {"GPU 1"}
    messages = " ".join(f.message for f in result.findings)
    assert "HW slowdown" in messages and "HW power brake slowdown" in messages
    assert {f.part_serial for f in result.findings} == {"1654923004478"}


def test_uncorrectable_ecc_and_pending_row_remap():
    result = nvidia_smi.parse(read("nvidia_smi_ecc_row_remap_pending.xml"))
    gpu0 = result.metrics["gpus"][0]
    assert gpu0["ecc_volatile_uncorrectable"] == 1
    assert gpu0["remapped_rows_pending"] is True
    assert {f.code for f in result.findings} == {"ecc_uncorrectable", "row_remap_pending"}
    assert {f.part for f in result.findings} == {"GPU 0"}


def test_pre_r535_throttle_reasons_and_double_bit_counters():
    result = nvidia_smi.parse(read("nvidia_smi_r525_thermal.xml"))
    assert result.driver_version == "525.147.05"
    assert result.metrics["gpus"][1]["clock_reasons_active"] == [
        "sw_power_cap",
        "hw_thermal_slowdown",
    ]
    assert result.metrics["gpus"][1]["power_w"] == 396.18
    assert [f.message for f in result.findings] == [
        "GPU 1 (00000000:2a:00.0): clocks held down by HW thermal slowdown"
    ]


def test_entity_expansion_is_refused():
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        '<!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><nvidia_smi_log><gpu>&lol2;</gpu></nvidia_smi_log>'
    )
    assert nvidia_smi.parse(bomb).error


def test_truncated_xml_is_an_error():
    assert "truncated" in nvidia_smi.parse(read("nvidia_smi_truncated.xml")).error


REAL = "real/netdata_nvidia_smi_x_535.86.05_rtx4090.xml"


def _loaded(xml: str) -> str:
    """The real RTX 4090 report as if read under load (P0, 100 % utilization, link at Gen3)."""
    xml = xml.replace(
        "<current_link_gen>1</current_link_gen>", "<current_link_gen>3</current_link_gen>"
    )
    xml = xml.replace(
        "<performance_state>P8</performance_state>", "<performance_state>P0</performance_state>"
    )
    return xml.replace("<gpu_util>0 %</gpu_util>", "<gpu_util>100 %</gpu_util>")


def test_pcie_link_downtrained_under_load_is_a_finding_naming_the_gpu():
    xml = read(REAL)
    assert nvidia_smi.parse(_loaded(xml)).findings == []
    narrow = _loaded(xml).replace(
        "<current_link_width>16x</current_link_width>",
        "<current_link_width>8x</current_link_width>",
    )
    (finding,) = nvidia_smi.parse(narrow).findings
    assert finding.code == "pcie_width_degraded" and finding.part == "GPU 0"
    assert "x8 of x16" in finding.message and "(00000000:" in finding.message


def test_a_text_report_names_a_link_trained_narrow_under_load():
    # The real H100's -q (580 driver, persistence on: P0) with its link as a reseated riser
    # would leave it; 580 prints the link inside the PCI section, with Device/Host columns.
    text = read("real/greenlight_h100_nvidia_smi_q_580.159.04_p0_idle.txt")
    assert nvidia_smi.parse(text).findings == []
    width = text.index("Link Width")
    narrow = text[:width] + text[width:].replace(
        "Current                                : 16x",
        "Current                                : 4x",
        1,
    )
    (finding,) = nvidia_smi.parse(narrow).findings
    assert finding.code == "pcie_width_degraded" and finding.part == "GPU 0"
    assert "x4 of x16" in finding.message and "00000000:00:06.0" in finding.message
    assert finding.part_serial == "1752524018811"


def test_an_idle_link_below_its_maximum_is_power_saving_not_a_finding():
    xml = read(REAL)
    assert "<performance_state>P8</performance_state>" in xml
    assert nvidia_smi.parse(xml).metrics["gpus"][0]["pcie_gen_current"] == 1
    assert nvidia_smi.parse(xml).findings == []


def test_a_filtered_report_cut_inside_a_gpu_block_names_what_is_missing():
    text = read("real/nvidia_smi_q_d_page_retirement_azhc_clean_8gpu.txt")
    cut = text[: text.index("Pending Page Blacklist", text.index("GPU 00000008"))]
    error = nvidia_smi.parse(cut).error
    assert error and "GPU 00000008:00:00.0 lacks Retired Pages/Pending Page Blacklist" in error
    fewer = text[: text.index("GPU 00000008")]
    assert "7 GPU sections of 8" in nvidia_smi.parse(fewer).error


def test_a_quoted_paste_reads_as_the_report():
    text = read("real/nvidia_smi_q_d_page_retirement_azhc_bad_8gpu.txt")
    quoted = "\n".join("> " + line for line in text.splitlines())
    plain, got = nvidia_smi.parse(text), nvidia_smi.parse(quoted)
    assert got.error is None and got.findings == plain.findings


def test_an_idle_link_narrower_than_its_maximum_warns_naming_the_gpu():
    # A real idle L4: Gen1 of Gen4 (power saving, silent) and x8 of x16 (worth a second look).
    result = nvidia_smi.parse(read("real/nvidia_smi_q_gls_l4_idle_gen1_x8_of_x16.txt"))
    (finding,) = result.findings
    assert finding.severity == Severity.WARNING and finding.code == "pcie_width_idle"
    assert finding.part == "GPU 8" and finding.part_serial == "1653723016068"
    assert "x8 of x16 while idle (P8)" in finding.message and "00000000:01:00.0" in finding.message


DOWNTRAINED = [
    "real/nvidia_smi_q_535.247.01_dcgm232_aws_a10g_x8_of_x16_p0.txt",
    "real/nvidia_smi_q_550.54.14_gls_rtx4060ti_2gpu_gpu0_x4_of_x8.txt",
    "real/nvidia_smi_x_515.65.01_datakit_gtx1050_laptop_x8_of_x16_p3.xml",
]


@pytest.mark.parametrize("name", DOWNTRAINED)
@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_a_real_downtrained_report_cut_short_is_an_error_not_its_finding(name, keep):
    text = read(name)
    assert [f.code for f in nvidia_smi.parse(text).findings] == ["pcie_width_degraded"]
    cut = nvidia_smi.parse(text[: int(len(text) * keep)])
    assert cut.error and not cut.findings
