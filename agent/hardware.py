"""The hardware layer: what the agent asks of the machine it runs on.

`Hardware` is the interface the commands use. `SystemHardware` drives a real node through its
real tools (dmidecode, ip, lspci, nvme-cli, sedutil-cli, mlxfwmanager, bfb-install, dcgmi,
nccl-tests, nvbandwidth, fio, gpu_burn, nvidia-smi, the kernel log). The lab replaces it with a
simulation. Every tool call passes through two seams (`capture`, `run`), so the tests drive the
real parsing with output recorded on real machines.
"""

from __future__ import annotations

import abc
import asyncio
import hashlib
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from . import erase, install_record, tpm
from . import inventory_sources as src
from .soak_telemetry import SOAK_QUERY, soak_sample
from .tool_commands import SIMPLE_COMMANDS, ToolParamsError, fio_command, kernel_log
from .tools import Capture, Log, Run, capture, run

__all__ = ["Hardware", "HardwareError", "Log", "SystemHardware", "run"]


class HardwareError(Exception):
    """A tool failed; the message names the device and the tool's own words."""


class Hardware(abc.ABC):
    """What the agent's commands need from a machine."""

    @abc.abstractmethod
    async def identity(self) -> dict[str, Any]:
        """{serial, macs}: how Greenlight recognises the node."""

    @abc.abstractmethod
    async def inventory(self) -> dict[str, Any]:
        """{gpus, nics, dpus, drives, os_image}: every part with serial and firmware.

        Each drive carries `erase_methods`, the erase methods it offers, strongest first.
        """

    @abc.abstractmethod
    async def flash(self, kind: str, device: dict, image: Path, version: str, log: Log) -> dict:
        """Flash one device; return {needs_reset, needs_power_cycle}."""

    @abc.abstractmethod
    async def erase(self, drive: dict, method: str, log: Log) -> dict:
        """Erase one drive by `method`; return {tool, exit_code, output}."""

    @abc.abstractmethod
    async def sample_blocks(self, drive: dict) -> str:
        """A digest of sampled blocks of a drive, to show an erase really changed them."""

    @abc.abstractmethod
    def set_boot_disk(self, disk: str) -> None:
        """Install on `disk` (the manifest names it) instead of the machine's default boot disk."""

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

    @abc.abstractmethod
    async def record_install(self, record: dict[str, Any]) -> None:
        """Keep what os_install wrote (image digest, signature check, host credential) with the
        installed disk; inventory's os_image is read back from it."""

    # Hooks with a default: a layer whose drives are not block devices (the lab's simulated
    # drives are one digest each) need not override them.

    async def mark_blocks(self, drive: dict) -> bool:
        """Write a marker over the regions the read-back samples; False where it cannot."""
        return False

    async def sample_regions(self, drive: dict) -> list[erase.RegionSample]:
        """The regions the erase read-back compares, one per sampled region."""
        return [erase.RegionSample(0, await self.sample_blocks(drive), zero=False)]


# The nvidia-smi fields the inventory reads, in order.
GPU_FIELDS = ("index", "uuid", "pci.bus_id", "serial", "name")
NVME_CONTROLLER = re.compile(r"^(/dev/nvme\d+)n\d+$")
SANITIZE_POLL_S = 10.0
SANITIZE_LIMIT_S = 24 * 3600.0


class SystemHardware(Hardware):
    """A real node, through its real tools.

    boot_disk: the disk os_install writes to; by default the first NVMe namespace, else the
    first disk. psids: drive serial -> the PSID printed on its label, where a site gives them
    (the only way to PSID-revert an Opal drive).
    """

    def __init__(
        self,
        *,
        capture: Capture = capture,
        run: Run = run,
        sys_root: Path = Path("/sys"),
        dev_root: Path = Path("/dev"),
        boot_disk: str | None = None,
        psids: dict[str, str] | None = None,
        sleep=asyncio.sleep,
        tpm_tcti: str | None = None,
    ) -> None:
        self.capture = capture
        self.run = run
        self.sys_root = sys_root
        self.dev_root = dev_root
        self.boot_disk_setting = boot_disk
        self.psids = dict(psids or {})
        self.sleep = sleep
        # The TPM's TCTI: the node's own device unless one is named (a simulator in the tests).
        self.tpm_tcti = tpm_tcti
        self._tpm: tpm.Tpm | None = None

    # -- identity and inventory -----------------------------------------------------------

    async def identity(self) -> dict[str, Any]:
        system = await self.system()
        ports = await self.ports()
        return {"serial": system["serial"], "macs": [p["mac"] for p in ports]}

    async def system(self) -> dict[str, str]:
        """Serial and product from the SMBIOS System Information record."""
        done = await self.capture(["dmidecode", "-t", "1"])
        if done.code == 0:
            return src.dmi_system(done.stdout)
        # dmidecode needs root and /dev/mem or sysfs' DMI tables; sysfs has the same strings.
        dmi = self.sys_root / "class/dmi/id"
        serial = dmi / "product_serial"
        if not serial.exists():
            raise HardwareError(
                f"dmidecode exited {done.code} ({done.stderr.strip()}) and no {serial}"
            )
        product = dmi / "product_name"
        return {
            "serial": serial.read_text().strip(),
            "product": product.read_text().strip() if product.exists() else "",
            "manufacturer": "",
        }

    async def ports(self) -> list[dict[str, str]]:
        """The physical network ports (`ip -d -j link`), in kernel order."""
        done = await self.capture(["ip", "-d", "-j", "link", "show"])
        if done.code == 0:
            return src.physical_links(done.stdout)
        # Without iproute2 (or one too old for -j) sysfs says the same: a port with a device.
        net = self.sys_root / "class/net"
        if not net.is_dir():
            raise HardwareError(f"ip link exited {done.code} ({done.stderr.strip()}) and no {net}")
        return [
            {
                "name": port.name,
                "mac": (port / "address").read_text().strip(),
                "bus": "",
                "pci": (port / "device").resolve().name,
            }
            for port in sorted(net.iterdir())
            if (port / "device").exists()
        ]

    async def inventory(self) -> dict[str, Any]:
        pci = await self._pci()
        nics, dpus = await self._mellanox(pci)
        ports = await self.ports()
        models = {d["slot"]: d["name"] for d in pci}
        return {
            "system": await self.system(),
            "gpus": await self._gpus(),
            "nics": nics,
            "dpus": dpus,
            "ports": [p | {"model": models.get(p["pci"], "")} for p in ports],
            "drives": await self._drives(),
            "os_image": self._os_image(),
        }

    async def _pci(self) -> list[dict[str, str]]:
        done = await self.capture(["lspci", "-Dnn"])
        return src.pci_devices(done.stdout) if done.code == 0 else []

    async def _gpus(self) -> list[dict[str, Any]]:
        done = await self.capture(
            ["nvidia-smi", f"--query-gpu={','.join(GPU_FIELDS)}", "--format=csv,noheader"]
        )
        if done.code != 0:
            return []  # no NVIDIA driver or no GPU: a node without GPUs, not an error
        return [
            {
                "index": g["index"],
                "serial": g["serial"],
                "uuid": g["uuid"],
                "pci": g["pci.bus_id"],
                "model": g["name"],
            }
            for g in src.nvidia_gpus(done.stdout, GPU_FIELDS)
        ]

    async def _mellanox(self, pci: list[dict[str, str]]) -> tuple[list[dict], list[dict]]:
        """ConnectX NICs and BlueField DPUs: mlxfwmanager's view, lspci's where MFT is absent."""
        done = await self.capture(["mlxfwmanager", "--query"])
        devices = src.mellanox_devices(done.stdout) if done.code == 0 else []
        nics, dpus = [], []
        for device in devices:
            entry = {
                "name": device["pci"],
                "model": device["part_number"],
                "psid": device["psid"],
                "serial": device["serial"],
                "firmware": device["firmware"],
                "description": device["description"],
                "base_mac": device["base_mac"],
            }
            (dpus if src.is_bluefield(device) else nics).append(entry)
        if not devices:
            dpus = src.bluefield_cards(pci)
        for i, dpu in enumerate(dpus):
            dpu["index"] = str(i)
            rshim = self.dev_root / f"rshim{i}"
            dpu["rshim"] = f"rshim{i}" if rshim.exists() else ""
        for i, nic in enumerate(nics):
            nic["index"] = str(i)
        return nics, dpus

    async def _drives(self) -> list[dict[str, Any]]:
        done = await self.capture(["nvme", "list", "-o", "json"])
        if done.code != 0:
            return []  # no NVMe controller (nvme-cli says so with a non-zero exit)
        namespaces = src.nvme_namespaces(done.stdout)
        opal = await self._opal()
        drives = []
        for ns in namespaces:
            match = NVME_CONTROLLER.match(ns["path"])
            controller = match.group(1) if match else ns["path"]
            ctrl = await self.capture(["nvme", "id-ctrl", controller, "-o", "json"])
            if ctrl.code != 0:
                raise HardwareError(
                    f"{controller}: nvme id-ctrl exited {ctrl.code}: {ctrl.stderr.strip()}"
                )
            info = src.nvme_controller(ctrl.stdout)
            psid = self.psids.get(info["serial"] or ns["serial"], "")
            drives.append(
                {
                    "index": controller.removeprefix("/dev/nvme"),
                    "name": ns["path"],
                    "controller": controller,
                    "serial": info["serial"] or ns["serial"],
                    "model": info["model"] or ns["model"],
                    "firmware": info["firmware"] or ns["firmware"],
                    "size_bytes": ns["size_bytes"],
                    "opal": controller in opal,
                    "psid": psid,
                    "erase_methods": erase.offered_methods(
                        erase.nvme_erase_methods(info["sanicap"], info["fna"], info["oacs"]),
                        controller in opal,
                        psid,
                    ),
                }
            )
        return drives

    async def _opal(self) -> set[str]:
        done = await self.capture(["sedutil-cli", "--scan"])
        return erase.opal_devices(done.stdout) if done.code == 0 else set()

    # -- the boot disk and its install record ---------------------------------------------

    def set_boot_disk(self, disk: str) -> None:
        self.boot_disk_setting = disk

    def boot_disk(self) -> str:
        """The disk os_install writes: the configured one, else the first NVMe, else the first."""
        if self.boot_disk_setting:
            return self.boot_disk_setting
        disks = install_record.whole_disks(self.sys_root / "block", self.dev_root)
        if not disks:
            raise HardwareError("no disk to install on: /sys/block lists none")
        return disks[0]

    def installed(self) -> tuple[str, dict[str, Any]] | None:
        """(disk, record) of the disk that holds an install record, if any does."""
        disks = install_record.whole_disks(self.sys_root / "block", self.dev_root)
        if self.boot_disk_setting:
            disks = [self.boot_disk_setting, *[d for d in disks if d != self.boot_disk_setting]]
        return install_record.find_installed(disks)

    def _os_image(self) -> dict[str, Any]:
        try:
            found = self.installed()
        except install_record.InstallRecordError as exc:
            # Damaged: the image is unknown, so it is reinstalled; the reason is shown.
            return {"sha256": "", "record_error": str(exc)}
        if found is None:
            return {"sha256": ""}
        disk, record = found
        return {"sha256": record.get("image_sha256", ""), "disk": disk} | {
            k: v for k, v in install_record.public_view(record).items() if k != "image_sha256"
        }

    async def write_image(self, image: Path, log: Log) -> None:
        target = self.boot_disk()
        room = install_record.region_offset(erase.device_size(target))
        if image.stat().st_size > room:
            raise HardwareError(
                f"{target}: the image ({image.stat().st_size} bytes) does not fit before the "
                f"install record region at byte {room}"
            )
        # notrunc: a file-backed disk must keep its size (a block device has no other).
        code, out = await self.run(
            ["dd", f"if={image}", f"of={target}", "bs=4M", "conv=fsync,notrunc", "status=none"],
            log,
        )
        if code:
            raise HardwareError(f"{target}: writing the OS image failed: {out[-500:]}")

    async def record_install(self, record: dict[str, Any]) -> None:
        target = self.boot_disk()
        try:
            install_record.write_record(target, record)
        except (OSError, install_record.InstallRecordError) as exc:
            raise HardwareError(f"{target}: cannot write the install record: {exc}") from None
        if install_record.read_record(target) != {"version": install_record.VERSION, **record}:
            raise HardwareError(f"{target}: the install record does not read back as written")

    async def verify_signature(self, image: Path, signature: str) -> bool:
        sig = Path(str(image) + ".sig")
        sig.write_text(signature)
        try:
            code, _ = await self.run(["gpgv", str(sig), str(image)])
        finally:
            sig.unlink(missing_ok=True)
        return code == 0

    # -- firmware -------------------------------------------------------------------------

    async def flash(self, kind: str, device: dict, image: Path, version: str, log: Log) -> dict:
        if kind == "nic":
            cmd = ["mlxfwmanager", "-u", "-y", "-i", str(image), "-d", device["name"]]
        elif kind == "dpu":
            if not device.get("rshim"):
                raise HardwareError(
                    f"{device['name']}: no rshim device for bfb-install (rshim not running)"
                )
            cmd = ["bfb-install", "--bfb", str(image), "--rshim", device["rshim"]]
        elif kind == "nvme":
            target = device.get("controller") or device["name"]
            code, out = await self.run(["nvme", "fw-download", target, "-f", str(image)], log)
            if code:
                raise HardwareError(f"{target}: nvme fw-download failed ({code}): {out}")
            cmd = ["nvme", "fw-commit", target, "-s", "1", "-a", "1"]
        else:
            raise HardwareError(f"no in-band flasher for {kind}")
        code, out = await self.run(cmd, log)
        if code:
            raise HardwareError(f"{device['name']}: {cmd[0]} failed ({code}): {out[-500:]}")
        return {"needs_reset": True, "needs_power_cycle": False}

    # -- erase ----------------------------------------------------------------------------

    async def erase(self, drive: dict, method: str, log: Log) -> dict:
        if method not in drive.get("erase_methods", []):
            raise HardwareError(f"{drive['name']}: the drive does not offer {method}")
        cmd = erase.erase_command(method, drive)
        code, out = await self.run(cmd, log)
        if code == 0 and method in (erase.SANITIZE_CRYPTO, erase.SANITIZE_BLOCK):
            # Sanitize returns at once and runs in the controller: wait for its log to say done.
            code, status = await self._await_sanitize(drive["controller"], log)
            out = f"{out}\n{status}"
        return {"tool": cmd[0], "exit_code": code, "output": out[-2000:]}

    async def _await_sanitize(self, controller: str, log: Log) -> tuple[int, str]:
        waited = 0.0
        while waited <= SANITIZE_LIMIT_S:
            done = await self.capture(["nvme", "sanitize-log", controller, "-o", "json"])
            if done.code != 0:
                return done.code, f"nvme sanitize-log exited {done.code}: {done.stderr.strip()}"
            status, progress = erase.sanitize_status(json.loads(done.stdout))
            if status in (erase.SANITIZE_DONE, erase.SANITIZE_DONE_NO_DEALLOC):
                return 0, "sanitize completed"
            if status == erase.SANITIZE_FAILED:
                return 1, "sanitize failed (sanitize log status 3)"
            log(f"{controller}: sanitize {progress * 100 // 65535}%")
            await self.sleep(SANITIZE_POLL_S)
            waited += SANITIZE_POLL_S
        return 1, f"sanitize did not finish within {SANITIZE_LIMIT_S:.0f} s"

    def _offsets(self, drive: dict) -> list[int]:
        size = int(drive.get("size_bytes") or 0) or erase.device_size(drive["name"])
        return erase.region_offsets(size)

    async def mark_blocks(self, drive: dict) -> bool:
        try:
            erase.write_markers(drive["name"], self._offsets(drive))
        except OSError:
            return False  # a locked (Opal) range refuses writes: compare what is there instead
        return True

    async def sample_regions(self, drive: dict) -> list[erase.RegionSample]:
        try:
            return erase.read_regions(drive["name"], self._offsets(drive))
        except OSError as exc:
            raise HardwareError(f"{drive['name']}: cannot read blocks back: {exc}") from None

    async def sample_blocks(self, drive: dict) -> str:
        regions = await self.sample_regions(drive)
        return hashlib.sha256("".join(r.sha256 for r in regions).encode()).hexdigest()

    # -- acceptance tools -----------------------------------------------------------------

    async def run_tool(self, tool: str, params: dict, log: Log) -> tuple[int, str]:
        if tool == "attestation":
            report = await self.attestation_report()
            report["tpm"] = await tpm.evidence(params, self.node_tpm(), self.sys_root)
            return 0, json.dumps(report)
        if tool == "soak":
            return await self.soak(params, log)
        if tool == "xid":
            return await kernel_log(self.capture)
        try:
            cmd = await self._fio(params) if tool == "fio" else SIMPLE_COMMANDS[tool](params)
        except ToolParamsError as exc:
            raise HardwareError(str(exc)) from None
        return await self.run(cmd, log)

    async def _fio(self, params: dict) -> list[str]:
        """Every NVMe namespace; written only where no installed OS lives.

        The disk holding an install record gets the read job alone: os_install's image and
        record are there. A storage gate that must measure writes on the boot disk runs before
        os_install. params["read_only"] makes every job a read.
        """
        drives = [d["name"] for d in await self._drives()]
        wanted = set(params.get("drives") or [])
        if wanted:
            drives = [d for d in drives if d in wanted or Path(d).name in wanted]
        found = self.installed()
        protected = Path(found[0]).name if found else None
        read_only = bool(params.get("read_only"))
        return fio_command(
            [(d, not read_only and Path(d).name != protected) for d in drives],
            int(params.get("runtime_s", 60)),
            int(params.get("iodepth", 32)),
        )

    async def reset_gpu(self, index: int, log: Log) -> None:
        code, output = await self.run(["nvidia-smi", "--gpu-reset", "-i", str(index)], log)
        if code != 0:
            raise HardwareError(
                f"GPU {index}: nvidia-smi --gpu-reset exited {code}: {output[-300:]}"
            )

    def node_tpm(self) -> tpm.Tpm | None:
        """The node's TPM, or None where it has none; one per agent, so the AK made by the
        attestation's keys step is there for its quote step."""
        if self._tpm is None:
            tcti = self.tpm_tcti or tpm.find_tcti(self.dev_root)
            if tcti is None:
                return None
            workdir = Path(tempfile.mkdtemp(prefix="greenlight-tpm-"))
            self._tpm = tpm.Tpm(tcti, workdir, self.capture)
        return self._tpm

    async def attestation_report(self) -> dict[str, Any]:
        """What this node reports: the image os_install recorded on its disk, firmware versions.

        The image's digest and signature check come from the install record on the boot disk
        (written by os_install after it verified both); firmware from the vendors' tools.
        """
        found = self.installed()
        record = found[1] if found else {}
        inventory = await self.inventory()
        measurements = {}
        for key, kind in (("nics", "nic"), ("dpus", "dpu"), ("drives", "nvme")):
            versions = {d.get("firmware", "") for d in inventory.get(key, [])}
            if versions:
                measurements[kind] = sorted(versions)[0] if len(versions) == 1 else sorted(versions)
        return {
            "image_sha256": record.get("image_sha256", ""),
            "signature_verified": bool(record.get("signature_verified")),
            "installed_at": record.get("installed_at", ""),
            "measurements": measurements,
        }

    async def soak(self, params: dict, log: Log) -> tuple[int, str]:
        """gpu_burn for the soak's chunk while nvidia-smi samples telemetry every interval.

        Each GPU's sample carries its PCI bus id, so the soak's XID lines name the GPU by
        index and serial without a table of bus ids.
        """
        duration = int(params.get("duration_s", 3600))
        interval = int(params.get("interval_s", 600))
        start_t = int(params.get("start_s", 0))
        burn = await asyncio.create_subprocess_exec(
            "gpu_burn", "-d", str(duration), stdout=asyncio.subprocess.DEVNULL
        )
        samples = []
        seen: dict[str, int] = {}  # bus id -> index, of every GPU that has reported
        for index, t in enumerate(range(0, duration + 1, interval)):
            done = await self.capture(
                ["nvidia-smi", f"--query-gpu={SOAK_QUERY}", "--format=csv,noheader,nounits"]
            )
            gpus = soak_sample(done.stdout + "\n" + done.stderr, seen)
            samples.append({"index": index, "t": start_t + t, "gpus": gpus})
            if t + interval <= duration:
                await self.sleep(interval)
        await burn.wait()
        return 0, json.dumps(samples)
