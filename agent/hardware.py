"""The hardware layer: what the agent asks of the machine it runs on.

`Hardware` is the interface the commands use. `SystemHardware` drives a real node through its
real tools (nvme-cli, sedutil-cli, mlxfwmanager, bfb-install, dcgmi, nccl-tests, nvbandwidth,
fio, gpu_burn, nvidia-smi, the kernel log). The lab replaces it with a simulation.
"""

from __future__ import annotations

import abc
import asyncio
import json
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

Log = Callable[[str], None]


class HardwareError(Exception):
    """A tool failed; the message names the device and the tool's own words."""


class Hardware(abc.ABC):
    """What the agent's commands need from a machine."""

    @abc.abstractmethod
    async def identity(self) -> dict[str, Any]:
        """{serial, macs}: how Greenlight recognises the node."""

    @abc.abstractmethod
    async def inventory(self) -> dict[str, Any]:
        """{gpus, nics, dpus, drives, os_image}: every part with serial and firmware."""

    @abc.abstractmethod
    async def flash(self, kind: str, device: dict, image: Path, version: str, log: Log) -> dict:
        """Flash one device; return {needs_reset, needs_power_cycle}."""

    @abc.abstractmethod
    async def erase(self, drive: dict, method: str, log: Log) -> dict:
        """Crypto-erase one drive by `method`; return {tool, exit_code, output}."""

    @abc.abstractmethod
    async def sample_blocks(self, drive: dict) -> str:
        """A digest of sampled blocks of a drive, to show an erase really changed them."""

    @abc.abstractmethod
    async def write_image(self, image: Path, log: Log) -> None:
        """Write a verified OS image to the boot disk."""

    @abc.abstractmethod
    async def verify_signature(self, image: Path, signature: str) -> bool:
        """Check an image's signature against the trusted keys of the environment."""

    @abc.abstractmethod
    async def run_tool(self, tool: str, params: dict, log: Log) -> tuple[int, str]:
        """Run an acceptance tool; return (exit code, its raw output)."""

    @abc.abstractmethod
    async def reset_gpu(self, index: int, log: Log) -> None:
        """Reset one GPU (applies a pending row remap, clears a contained ECC error)."""


async def run(
    cmd: list[str], log: Log | None = None, timeout: float | None = None
) -> tuple[int, str]:
    """Run a command, streaming its output to `log`; return (exit code, output)."""
    if log:
        log("$ " + shlex.join(cmd))
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    lines: list[str] = []
    assert proc.stdout is not None

    async def pump() -> None:
        async for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            lines.append(line)
            if log:
                log(line)

    await asyncio.wait_for(pump(), timeout)
    return await proc.wait(), "\n".join(lines)


# The commands each acceptance tool runs on a real node.
TOOL_COMMANDS: dict[str, Callable[[dict], list[str]]] = {
    "dcgm": lambda p: ["dcgmi", "diag", "-r", str(p.get("level", 3)), "-j"],
    "nccl": lambda p: [
        "mpirun",
        "--host",
        ",".join(p.get("hosts", [])),
        "-np",
        str(p.get("ranks", 16)),
        # One rail: that rail's NIC and the GPU beside it, on both nodes.
        *(
            ["-x", f"NCCL_IB_HCA=mlx5_{p['rail']}", "-x", f"CUDA_VISIBLE_DEVICES={p['rail']}"]
            if p.get("rail") is not None
            else []
        ),
        "all_reduce_perf",
        "-b",
        "8",
        "-e",
        str(p.get("max_bytes", "16G")),
        "-f",
        "2",
        "-g",
        "1",
    ],  # fmt: skip
    "nvbandwidth": lambda p: ["nvbandwidth"],
    "fio": lambda p: [
        "fio",
        "--output-format=json",
        "--name=seqread",
        "--rw=read",
        "--bs=1M",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=32",
        "--runtime=60",
        "--time_based",
        "--filename=" + p.get("device", "/dev/nvme0n1"),
        "--name=seqwrite",
        "--rw=write",
        "--stonewall",
    ],  # fmt: skip
    "gpu-burn": lambda p: ["gpu_burn", "-d", str(int(p.get("duration_s", 600)))],
    "nvidia-smi": lambda p: ["nvidia-smi", "-q", "-x"],
    "xid": lambda p: ["journalctl", "-k", "--no-pager", "-g", "NVRM: Xid"],
}


class SystemHardware(Hardware):
    """A real node, through its real tools."""

    async def identity(self) -> dict[str, Any]:
        serial = Path("/sys/class/dmi/id/product_serial").read_text().strip()
        macs = []
        for iface in sorted(Path("/sys/class/net").iterdir()):
            if iface.name != "lo" and (iface / "device").exists():
                macs.append((iface / "address").read_text().strip())
        return {"serial": serial, "macs": macs}

    async def inventory(self) -> dict[str, Any]:
        _, gpus = await run(
            ["nvidia-smi", "--query-gpu=index,serial,pci.bus_id,name", "--format=csv,noheader"]
        )
        _, nvme = await run(["nvme", "list", "-o", "json"])
        _, nics = await run(["mlxfwmanager", "--query", "--query-format", "JSON"])
        return {
            "gpus": [
                dict(
                    zip(
                        ("index", "serial", "pci", "model"),
                        (f.strip() for f in line.split(",")),
                        strict=False,
                    )
                )
                for line in gpus.splitlines()
                if line.strip()
            ],
            "drives": [
                {
                    "name": d.get("DevicePath"),
                    "serial": d.get("SerialNumber", "").strip(),
                    "model": d.get("ModelNumber", "").strip(),
                    "firmware": d.get("Firmware", "").strip(),
                }
                for d in json.loads(nvme or "{}").get("Devices", [])
            ],
            "nics": _mlx_devices(nics),
            "dpus": [],
            "os_image": {"sha256": os.environ.get("GREENLIGHT_OS_IMAGE_SHA256", "")},
        }

    async def flash(self, kind: str, device: dict, image: Path, version: str, log: Log) -> dict:
        if kind == "nic":
            cmd = ["mlxfwmanager", "-u", "-y", "-i", str(image), "-d", device["name"]]
        elif kind == "dpu":
            cmd = ["bfb-install", "--bfb", str(image), "--rshim", device["name"]]
        elif kind == "nvme":
            code, out = await run(["nvme", "fw-download", device["name"], "-f", str(image)], log)
            if code:
                raise HardwareError(f"{device['name']}: nvme fw-download failed ({code}): {out}")
            cmd = ["nvme", "fw-commit", device["name"], "-s", "1", "-a", "1"]
        else:
            raise HardwareError(f"no in-band flasher for {kind}")
        code, out = await run(cmd, log)
        if code:
            raise HardwareError(f"{device['name']}: {cmd[0]} failed ({code}): {out[-500:]}")
        return {"needs_reset": True, "needs_power_cycle": False}

    async def erase(self, drive: dict, method: str, log: Log) -> dict:
        dev = drive["name"]
        if method == "nvme_sanitize_crypto":
            cmd = ["nvme", "sanitize", dev, "--sanact=4"]
        elif method == "nvme_format_crypto":
            cmd = ["nvme", "format", dev, "--ses=2", "--force"]
        elif method == "opal_psid_revert":
            cmd = [
                "sedutil-cli",
                "--yesIreallywanttoERASEALLmydatausingthePSID",
                drive["psid"],
                dev,
            ]
        else:
            raise HardwareError(f"{dev}: unknown erase method {method}")
        code, out = await run(cmd, log)
        return {"tool": cmd[0], "exit_code": code, "output": out[-2000:]}

    async def sample_blocks(self, drive: dict) -> str:
        code, out = await run(
            [
                "sh",
                "-c",
                f"dd if={shlex.quote(drive['name'])} bs=1M count=4 2>/dev/null | sha256sum",
            ]
        )
        if code:
            raise HardwareError(f"{drive['name']}: cannot read blocks back")
        return out.split()[0]

    async def write_image(self, image: Path, log: Log) -> None:
        target = os.environ.get("GREENLIGHT_BOOT_DISK", "/dev/nvme0n1")
        code, out = await run(["dd", f"if={image}", f"of={target}", "bs=4M", "conv=fsync"], log)
        if code:
            raise HardwareError(f"{target}: writing the OS image failed: {out[-500:]}")

    async def verify_signature(self, image: Path, signature: str) -> bool:
        sig = Path(str(image) + ".sig")
        sig.write_text(signature)
        code, _ = await run(["gpgv", str(sig), str(image)])
        return code == 0

    async def run_tool(self, tool: str, params: dict, log: Log) -> tuple[int, str]:
        if tool == "attestation":
            return 0, json.dumps(await self.attestation_report())
        if tool == "soak":
            return await self.soak(params, log)
        return await run(TOOL_COMMANDS[tool](params), log)

    async def reset_gpu(self, index: int, log: Log) -> None:
        code, output = await run(["nvidia-smi", "--gpu-reset", "-i", str(index)], log)
        if code != 0:
            raise HardwareError(
                f"GPU {index}: nvidia-smi --gpu-reset exited {code}: {output[-300:]}"
            )

    async def attestation_report(self) -> dict[str, Any]:
        """What this boot measured: the image on disk, its signature check, firmware versions.

        The installer leaves the verified image's digest and signature check under /etc/greenlight
        (measured into the TPM by the boot chain); firmware versions come from the vendors' tools.
        """
        marker = Path("/etc/greenlight/image.json")
        image = json.loads(marker.read_text()) if marker.exists() else {}
        inventory = await self.inventory()
        measurements = {}
        for key, kind in (("nics", "nic"), ("dpus", "dpu"), ("drives", "nvme")):
            versions = {d.get("firmware", "") for d in inventory.get(key, [])}
            if versions:
                measurements[kind] = sorted(versions)[0] if len(versions) == 1 else sorted(versions)
        return {
            "image_sha256": image.get("sha256", ""),
            "signature_verified": bool(image.get("signature_verified")),
            "measurements": measurements,
        }

    async def soak(self, params: dict, log: Log) -> tuple[int, str]:
        """gpu_burn for the soak's chunk while nvidia-smi samples telemetry every interval."""
        duration = int(params.get("duration_s", 3600))
        interval = int(params.get("interval_s", 600))
        start_t = int(params.get("start_s", 0))
        burn = await asyncio.create_subprocess_exec(
            "gpu_burn", "-d", str(duration), stdout=asyncio.subprocess.DEVNULL
        )
        samples = []
        query = "index,temperature.gpu,power.draw,clocks.sm,clocks_event_reasons.active"
        for index, t in enumerate(range(0, duration + 1, interval)):
            _, out = await run(
                ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"]
            )
            gpus = []
            for line in out.splitlines():
                gpu, temp, power, clock, reasons = (f.strip() for f in line.split(","))
                gpus.append(
                    {
                        "gpu": int(gpu),
                        "temp_c": int(float(temp)),
                        "power_w": float(power),
                        "sm_clock_mhz": int(float(clock)),
                        "clocks_event_reasons": _reasons(int(reasons, 16)),
                    }
                )
            samples.append({"index": index, "t": start_t + t, "gpus": gpus})
            if t + interval <= duration:
                await asyncio.sleep(interval)
        await burn.wait()
        return 0, json.dumps(samples)


# nvidia-smi's clocks_event_reasons.active bit mask, named as the parsers name them.
_REASON_BITS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
}


def _reasons(mask: int) -> list[str]:
    return [name for bit, name in _REASON_BITS.items() if mask & bit]


def _mlx_devices(text: str) -> list[dict[str, str]]:
    try:
        devices = json.loads(text or "{}").get("Devices", [])
    except json.JSONDecodeError:
        return []
    return [
        {
            "name": d.get("PCI Device Name", ""),
            "model": d.get("Part Number", ""),
            "psid": d.get("PSID", ""),
            "firmware": (d.get("Versions", {}).get("FW") or {}).get("Current", ""),
            "serial": d.get("Serial Number", ""),
        }
        for d in devices
    ]
