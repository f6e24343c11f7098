"""Single-node GPU tools in their real formats: dcgmi diag -j, nvidia-smi -q -x, gpu-burn, kernel log."""

from __future__ import annotations

import json
from typing import Any

from .node import Fault, SimNode, faults_named, faulty_gpus

# When a marginal GPU gives out under sustained load, in seconds of load (overridable per fault).
MARGINAL_ONSET_S = 6 * 3600
SOAK_UPTIME_START_S = 4000.0

DCGM3_SOFTWARE = (
    "Denylist",
    "NVML Library",
    "CUDA Main Library",
    "Permissions and OS-related Blocks",
    "Persistence Mode",
    "Environment Variables",
    "Page Retirement/Row Remap",
    "Graphics Processes",
    "Inforom",
)
# (3.x display name, 4.x name, category, first level that runs it)
DCGM_PLUGINS = (
    ("PCIe", "pcie", "Integration", 2),
    ("GPU Memory", "memory", "Hardware", 2),
    ("Diagnostic", "diagnostic", "Hardware", 3),
    ("Targeted Stress", "targeted_stress", "Stress", 3),
    ("Targeted Power", "targeted_power", "Stress", 3),
    ("Memory Bandwidth", "memory_bandwidth", "Stress", 3),
    ("Memtest", "memtest", "Hardware", 4),
    ("Pulse Test", "pulse_test", "Hardware", 4),
)
ROW_REMAP_WARNING = (
    "GPU {gpu} had uncorrectable memory errors and row remapping is pending. Drain the GPU and "
    "reset it or reboot the node to resolve this issue."
)


def dcgm_diag_json(
    node: SimNode, level: int = 3, faults: Fault | list[Fault] | None = None, version: str = "3.3.7"
) -> str:
    """`dcgmi diag -r LEVEL -j`; version 3.x or 4.x picks the JSON layout."""
    ecc = faulty_gpus(faults, "ecc_uncorrectable")
    if version.startswith("3."):
        return json.dumps(_dcgm3(node, level, ecc, version), indent=4)
    return json.dumps(_dcgm4(node, level, ecc, version), indent="\t")


def _dcgm3(node: SimNode, level: int, ecc: set[int], version: str) -> dict:
    all_ids = ",".join(str(i) for i in range(node.gpu_count))
    software = []
    for name in DCGM3_SOFTWARE:
        entry: dict[str, Any] = {"gpu_ids": all_ids, "status": "Pass"}
        if name == "Page Retirement/Row Remap" and ecc:
            entry = {
                "gpu_ids": all_ids,
                "status": "Fail",
                "warnings": [
                    {"warning": ROW_REMAP_WARNING.format(gpu=g), "error_id": 82}
                    for g in sorted(ecc)
                ],
            }
        elif name == "Inforom":
            entry["status"] = "Skip"
        software.append({"name": name, "results": [entry]})
    categories = {"Deployment": software}
    for display, _, category, first in DCGM_PLUGINS:
        if level >= first:
            results = [{"gpu_id": str(i), "status": "Pass"} for i in range(node.gpu_count)]
            categories.setdefault(category, []).append({"name": display, "results": results})
    return {
        "DCGM GPU Diagnostic": {
            "test_categories": [{"category": c, "tests": t} for c, t in categories.items()],
            "version": version,
            "Driver Version Detected": node.driver_version,
            "GPU Device IDs": ["2330"] * node.gpu_count,
            "GPU Device Serials": {str(i): s for i, s in enumerate(node.gpu_serials)},
        }
    }


def _dcgm4(node: SimNode, level: int, ecc: set[int], version: str) -> dict:
    def per_gpu(fail_on: set[int], warning: str = "") -> list[dict]:
        out = []
        for i in range(node.gpu_count):
            entry: dict[str, Any] = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": i}
            if i in fail_on:
                entry["status"] = "Fail"
                entry["warnings"] = [
                    {
                        "error_category": 6,
                        "error_id": 82,
                        "error_severity": 2,
                        "warning": warning.format(gpu=i),
                    }
                ]
            else:
                entry["status"] = "Pass"
            out.append(entry)
        return out

    def test(name: str, results: list[dict]) -> dict:
        bad = any(r["status"] == "Fail" for r in results)
        return {
            "name": name,
            "results": results,
            "test_summary": {"status": "Fail" if bad else "Pass"},
        }

    categories = {"Deployment": [test("software", per_gpu(ecc, ROW_REMAP_WARNING))]}
    for _, name, category, first in DCGM_PLUGINS:
        if level >= first:
            categories.setdefault(category, []).append(test(name, per_gpu(set())))
    return {
        "DCGM Diagnostic": {
            "test_categories": [{"category": c, "tests": t} for c, t in categories.items()],
        },
        "entity_groups": [
            {
                "entities": [
                    {"device_id": "2330", "entity_id": i, "serial_num": s}
                    for i, s in enumerate(node.gpu_serials)
                ],
                "entity_group": "GPU",
                "entity_group_id": 1,
            }
        ],
        "metadata": {"Driver Version Detected": node.driver_version, "version": version},
    }


def nvidia_smi_xml(
    node: SimNode, faults: Fault | list[Fault] | None = None, under_load: bool = False
) -> str:
    """`nvidia-smi -q -x` (driver R535+ element names: clocks_event_reasons, gpu_power_readings)."""
    rng = node.rng(f"nvidia-smi:{under_load}")
    ecc = faulty_gpus(faults, "ecc_uncorrectable")
    hot = faulty_gpus(faults, "thermal_throttle")
    gpus = []
    for i in range(node.gpu_count):
        temp = rng.randint(62, 71) if under_load else rng.randint(29, 36)
        power = rng.uniform(660, 699) if under_load else rng.uniform(68, 75)
        reasons = {"gpu_idle": not under_load, "sw_power_cap": under_load}
        if under_load and i in hot:
            temp, reasons["hw_thermal_slowdown"], reasons["sw_thermal_slowdown"] = 91, True, True
        unc = 2 if i in ecc else 0
        gpus.append(_smi_gpu(node, i, temp, power, reasons, unc))
    return (
        '<?xml version="1.0" ?>\n'
        '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
        "<nvidia_smi_log>\n"
        "\t<timestamp>Tue Jun  4 09:12:44 2024</timestamp>\n"
        f"\t<driver_version>{node.driver_version}</driver_version>\n"
        "\t<cuda_version>12.4</cuda_version>\n"
        f"\t<attached_gpus>{node.gpu_count}</attached_gpus>\n"
        + "".join(gpus)
        + "</nvidia_smi_log>\n"
    )


REASON_TAGS = (
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "display_clocks_setting",
)


def _smi_gpu(node: SimNode, i: int, temp: int, power: float, reasons: dict, unc: int) -> str:
    bus = node.gpu_bus_ids[i].upper().replace("0000:", "00000000:", 1)
    reason_xml = "".join(
        f"\t\t\t<clocks_event_reason_{tag}>{'Active' if reasons.get(tag) else 'Not Active'}"
        f"</clocks_event_reason_{tag}>\n"
        for tag in REASON_TAGS
    )

    def ecc_block(kind: str) -> str:
        return (
            f"\t\t\t<{kind}>\n\t\t\t\t<sram_correctable>0</sram_correctable>\n"
            "\t\t\t\t<sram_uncorrectable_parity>0</sram_uncorrectable_parity>\n"
            "\t\t\t\t<sram_uncorrectable_secded>0</sram_uncorrectable_secded>\n"
            f"\t\t\t\t<dram_correctable>{3 if unc else 0}</dram_correctable>\n"
            f"\t\t\t\t<dram_uncorrectable>{unc}</dram_uncorrectable>\n\t\t\t</{kind}>\n"
        )

    return (
        f'\t<gpu id="{bus}">\n'
        f"\t\t<product_name>{node.gpu_model}</product_name>\n"
        "\t\t<persistence_mode>Enabled</persistence_mode>\n"
        f"\t\t<serial>{node.gpu_serials[i]}</serial>\n"
        f"\t\t<uuid>{node.gpu_uuid(i)}</uuid>\n"
        f"\t\t<minor_number>{i}</minor_number>\n"
        "\t\t<vbios_version>96.00.89.00.01</vbios_version>\n"
        f"\t\t<pci>\n\t\t\t<pci_bus>{bus[9:11]}</pci_bus>\n\t\t\t<pci_bus_id>{bus}</pci_bus_id>\n\t\t</pci>\n"
        f"\t\t<performance_state>{'P0' if power > 100 else 'P0'}</performance_state>\n"
        f"\t\t<clocks_event_reasons>\n{reason_xml}\t\t</clocks_event_reasons>\n"
        "\t\t<ecc_mode>\n\t\t\t<current_ecc>Enabled</current_ecc>\n\t\t\t<pending_ecc>Enabled</pending_ecc>\n\t\t</ecc_mode>\n"
        f"\t\t<ecc_errors>\n{ecc_block('volatile')}{ecc_block('aggregate')}\t\t</ecc_errors>\n"
        "\t\t<remapped_rows>\n"
        "\t\t\t<remapped_row_corr>0</remapped_row_corr>\n"
        f"\t\t\t<remapped_row_unc>{1 if unc else 0}</remapped_row_unc>\n"
        f"\t\t\t<remapped_row_pending>{'Yes' if unc else 'No'}</remapped_row_pending>\n"
        "\t\t\t<remapped_row_failure>No</remapped_row_failure>\n"
        "\t\t</remapped_rows>\n"
        "\t\t<temperature>\n"
        f"\t\t\t<gpu_temp>{temp} C</gpu_temp>\n"
        "\t\t\t<gpu_temp_max_threshold>92 C</gpu_temp_max_threshold>\n"
        "\t\t\t<gpu_temp_slow_threshold>89 C</gpu_temp_slow_threshold>\n"
        f"\t\t\t<memory_temp>{temp + 8} C</memory_temp>\n"
        "\t\t</temperature>\n"
        "\t\t<gpu_power_readings>\n"
        "\t\t\t<power_state>P0</power_state>\n"
        f"\t\t\t<power_draw>{power:.2f} W</power_draw>\n"
        "\t\t\t<current_power_limit>700.00 W</current_power_limit>\n"
        "\t\t</gpu_power_readings>\n"
        "\t</gpu>\n"
    )


def gpu_burn_text(
    node: SimNode, faults: Fault | list[Fault] | None = None, duration_s: int = 600
) -> str:
    """gpu-burn's output for a run of duration_s; a marginal GPU fails only past its onset."""
    rng = node.rng(f"gpu-burn:{duration_s}")
    dying = {
        g
        for f in faults_named(faults, "marginal_gpu")
        if duration_s >= int(f.get("after_s", MARGINAL_ONSET_S))
        for g in faulty_gpus(f, "marginal_gpu")
    }
    n = node.gpu_count
    lines = [f"Burning for {duration_s} seconds."]
    lines += [f"GPU {i}: {node.gpu_model} (UUID: {node.gpu_uuid(i)})" for i in range(n)]
    lines += [
        f"Initialized device {i} with 81008 MB of memory (80361 MB available, using 72325 MB "
        "of it), using FLOATS"
        for i in range(n)
    ]
    lines.append("Results are 268435456 bytes each, thus performing 280 iterations")
    base = [rng.uniform(49500, 51500) for _ in range(n)]
    for step in range(1, 11):
        pct = step * 10.0
        procd = " - ".join(
            f"{int(base[i] * duration_s * pct / 100 / 1300)} ({base[i]:.0f} Gflop/s)"
            for i in range(n)
        )
        errs = " - ".join(
            (f"{step * 37}  (DIED!)" if i in dying and step >= 6 else "0") for i in range(n)
        )
        temps = " - ".join(f"{rng.randint(63, 72)} C" for _ in range(n))
        lines.append(f"{pct:.1f}%  proc'd: {procd}   errors: {errs}   temps: {temps} ")
        if step % 5 == 0:
            lines.append(
                f"\tSummary at:   Tue Jun  4 10:{step * duration_s // 600 % 60:02d}:00 UTC 2024"
            )
            lines.append("")
    lines += ["", "Killing processes with SIGTERM (soft kill)"]
    lines += [f"Freed memory for dev {i}" for i in range(n)]
    lines += ["Uninitted cublas" for _ in range(n)]
    lines += ["done", "", f"Tested {n} GPUs:"]
    lines += [f"\tGPU {i}: {'FAULTY' if i in dying else 'OK'}" for i in range(n)]
    return "\n".join(lines) + "\n"


def kernel_log_xid(
    node: SimNode,
    faults: Fault | list[Fault] | None = None,
    phase: str = "gate",
    soak_s: int = 72 * 3600,
    uptime_start_s: float = SOAK_UPTIME_START_S,
) -> str:
    """dmesg of the node during a gate (phase="gate") or a soak of soak_s seconds (phase="soak")."""
    lines = [
        "[    4.118230] nvidia: loading out-of-tree module taints kernel.",
        f"[    4.301277] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {node.driver_version}",
        "[    5.902114] nvidia-nvswitch0: open (major=510)",
        "[   61.447310] mlx5_core 0000:1a:00.0: mlx5_fw_tracer_init:853: FWTracer: Ownership granted",
    ]
    events: list[tuple[float, str]] = []
    for i in faulty_gpus(faults, "ecc_uncorrectable"):
        events.append(
            (uptime_start_s - 900.0, _xid(node, i, 94, "Contained: SM (0x1). RST: Yes, D-RST: No"))
        )
    for fault in faults_named(faults, "row_remap_event"):
        for k in range(int(fault.get("count", 1))):
            events.append(
                (
                    uptime_start_s - 1200.0 + 600.0 * k,
                    _xid(
                        node,
                        faulty_gpus(fault, "row_remap_event").pop(),
                        63,
                        "Row Remapper: New row (0x0000000000a1c3f0) marked for remapping, reset gpu to activate.",
                    ),
                )
            )
    if phase == "soak":
        for fault in faults_named(faults, "marginal_gpu"):
            onset = int(fault.get("after_s", MARGINAL_ONSET_S))
            if onset <= soak_s:
                gpu = faulty_gpus(fault, "marginal_gpu").pop()
                events.append(
                    (uptime_start_s + onset, _xid(node, gpu, 79, "GPU has fallen off the bus."))
                )
    lines += [f"[{t:12.6f}] {msg}" for t, msg in sorted(events)]
    return "\n".join(lines) + "\n"


def _xid(node: SimNode, gpu: int, xid: int, detail: str) -> str:
    bus = node.gpu_bus_ids[gpu].split(".")[0]
    return f"NVRM: Xid (PCI:{bus}): {xid}, pid=2417, name=gpu_burn, {detail}"


def soak_samples(
    node: SimNode,
    faults: Fault | list[Fault] | None = None,
    duration_s: int = 72 * 3600,
    interval_s: int = 1800,
    uptime_start_s: float = SOAK_UPTIME_START_S,
) -> list[dict[str, Any]]:
    """Telemetry samples through a soak: temperature, power, SM clock and active clock reasons per GPU."""
    rng = node.rng("soak")
    hot = faulty_gpus(faults, "thermal_throttle")
    lost_at = {
        faulty_gpus(f, "marginal_gpu").pop(): int(f.get("after_s", MARGINAL_ONSET_S))
        for f in faults_named(faults, "marginal_gpu")
    }
    samples = []
    for index, t in enumerate(range(0, duration_s + 1, interval_s)):
        gpus = []
        for i in range(node.gpu_count):
            if i in lost_at and t >= lost_at[i]:
                gpus.append({"gpu": i, "bus_id": node.gpu_bus_ids[i], "lost": True})
                continue
            reasons = ["sw_power_cap"]
            temp = rng.randint(63, 72)
            clock = rng.randint(1755, 1980)
            if i in hot and t >= interval_s:
                reasons += ["hw_thermal_slowdown"]
                temp, clock = rng.randint(89, 93), rng.randint(1100, 1300)
            gpus.append(
                {
                    "gpu": i,
                    "bus_id": node.gpu_bus_ids[i],
                    "temp_c": temp,
                    "power_w": round(rng.uniform(655, 699), 1),
                    "sm_clock_mhz": clock,
                    "clocks_event_reasons": reasons,
                }
            )
        samples.append({"index": index, "t": t, "uptime_s": uptime_start_s + t, "gpus": gpus})
    return samples
