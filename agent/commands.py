"""The agent's commands: each turns a request from Greenlight into calls on the hardware layer."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from . import erase, protocol
from .downloads import fetch_verified
from .hardware import Hardware, HardwareError, Log

INVENTORY_KEYS = {"nic": "nics", "dpu": "dpus", "nvme": "drives"}


class CommandFailed(Exception):
    """A command could not do what it was asked; `result` says how far it got."""

    def __init__(self, message: str, result: dict[str, Any] | None = None):
        super().__init__(message)
        self.result = result or {}


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


async def inventory(hw: Hardware, http: httpx.AsyncClient, params: dict, log: Log) -> dict:
    """Every part with serial and firmware, and the OS image on the boot disk."""
    return await hw.inventory()


def _flash_targets(params: dict) -> list[dict]:
    targets = params.get("targets")
    wanted = ("version", "url", "sha256")
    if not isinstance(targets, list) or not all(
        isinstance(t, dict) and all(isinstance(t.get(k), str) and t[k] for k in wanted)
        for t in targets
    ):
        raise CommandFailed(
            "flash_firmware: targets must be a list of {model, version, url, sha256}"
        )
    return targets


async def flash_firmware(hw: Hardware, http: httpx.AsyncClient, params: dict, log: Log) -> dict:
    """Flash every device of one kind that is not at its target's version (and only those).

    Each device takes the first target whose model covers it (`protocol.firmware_target_for`);
    each artifact is fetched and verified once, and a controller is flashed once however many
    namespaces it shows.
    """
    kind, targets = params["component"], _flash_targets(params)
    devices = (await hw.inventory()).get(INVENTORY_KEYS[kind], [])
    plan: list[tuple[dict, dict]] = []
    seen: set[str] = set()
    for device in devices:
        target = protocol.firmware_target_for(device, targets)
        controller = device.get("controller") or _name(kind, device)
        if target is None or device.get("firmware") == target["version"] or controller in seen:
            continue
        seen.add(controller)
        plan.append((device, target))
    flashed: list[dict] = []
    if not plan:
        log(f"every {kind} already runs its target version")
        return {"flashed": [], "needs_reset": False, "needs_power_cycle": False}
    images: dict[str, Path] = {}
    needs_reset = needs_cycle = False
    try:
        for device, target in plan:
            if target["url"] not in images:
                images[target["url"]] = await fetch_verified(http, target["url"], target["sha256"])
                log(f"{target['url']}: sha256 verified")
            version = target["version"]
            try:
                effect = await hw.flash(kind, device, images[target["url"]], version, log)
            except HardwareError as exc:
                raise CommandFailed(
                    str(exc), {"flashed": flashed, "failed_device": _name(kind, device)}
                ) from None
            flashed.append(
                {
                    "device": _name(kind, device),
                    "serial": device.get("serial", ""),
                    "from": device.get("firmware", ""),
                    "to": version,
                }
            )
            needs_reset |= bool(effect.get("needs_reset"))
            needs_cycle |= bool(effect.get("needs_power_cycle"))
    finally:
        for image in images.values():
            image.unlink(missing_ok=True)
    return {"flashed": flashed, "needs_reset": needs_reset, "needs_power_cycle": needs_cycle}


# The older drive flags some hardware layers still report (the lab's), mapped to methods.
_LEGACY_FLAGS = (
    ("sanitize_crypto", erase.SANITIZE_CRYPTO),
    ("format_crypto", erase.FORMAT_CRYPTO),
)


def erase_methods(drive: dict, psids: dict[str, str] | None = None) -> list[str]:
    """The erase methods a drive offers, strongest first, with PSID revert where a PSID is known."""
    if "erase_methods" in drive:
        methods = list(drive["erase_methods"])
    else:
        methods = [method for flag, method in _LEGACY_FLAGS if drive.get(flag)]
    psid = drive.get("psid") or (psids or {}).get(drive.get("serial", ""), "")
    return erase.offered_methods(methods, bool(drive.get("opal")), psid)


def choose_erase_method(drive: dict, psids: dict[str, str] | None = None) -> str | None:
    """The strongest erase the drive offers (see agent.erase for the order), or None."""
    methods = erase_methods(drive, psids)
    return methods[0] if methods else None


async def secure_erase(hw: Hardware, http: httpx.AsyncClient, params: dict, log: Log) -> dict:
    """Erase every drive by its strongest method, each checked by exit code and read-back.

    params: serials (only these drives), psids ({serial: PSID} for Opal PSID revert).
    """
    wanted = set(params.get("serials") or [])
    psids = dict(params.get("psids") or {})
    drives = [
        d for d in (await hw.inventory()).get("drives", []) if not wanted or d["serial"] in wanted
    ]
    reports = []
    for drive in drives:
        reports.append(await _erase_one(hw, drive, psids, log))
    failed = [r for r in reports if r["result"] != "passed"]
    result = {"drives": reports}
    if failed:
        names = ", ".join(f"{r['name']} {r['serial']} ({r['verification']})" for r in failed)
        raise CommandFailed(f"erase failed on {names}", result)
    return result


async def _erase_one(hw: Hardware, drive: dict, psids: dict[str, str], log: Log) -> dict:
    report = {
        "name": drive.get("name", ""),
        "serial": drive.get("serial", ""),
        "model": drive.get("model", ""),
        "started_at": _now(),
    }
    psid = drive.get("psid") or psids.get(report["serial"], "")
    drive = drive | {"psid": psid, "erase_methods": erase_methods(drive, psids)}
    method = choose_erase_method(drive)
    if method is None:
        return report | {
            "method": "",
            "tool": "",
            "result": "failed",
            "verification": (
                f"{report['name']} (serial {report['serial']}) offers no erase method: no "
                "sanitize, no format, and no Opal with a known PSID"
            ),
            "finished_at": _now(),
        }
    try:
        marked = await hw.mark_blocks(drive)
        before = await hw.sample_regions(drive)
        outcome = await hw.erase(drive, method, log)
        after = await hw.sample_regions(drive)
    except HardwareError as exc:
        return report | {
            "method": method,
            "tool": "",
            "result": "failed",
            "verification": str(exc),
            "finished_at": _now(),
        }
    if outcome["exit_code"] != 0:
        verdict, check = "failed", f"{outcome['tool']} exited {outcome['exit_code']}"
    else:
        passed, check = erase.verify_readback(method, before, after)
        verdict = "passed" if passed else "failed"
        if marked:
            check += "; regions were marked before the erase"
    log(f"{report['serial']}: {method}: {verdict} ({check})")
    return report | {
        "method": method,
        "tool": outcome["tool"],
        "exit_code": outcome["exit_code"],
        "result": verdict,
        "verification": check,
        "finished_at": _now(),
    }


async def install_os(hw: Hardware, http: httpx.AsyncClient, params: dict, log: Log) -> dict:
    """Download the image, check sha256 and signature, write it and its install record.

    The record (agent.install_record) goes onto the same disk: it is how the installed OS is
    known later, and it carries the optional host credential the installed OS's agent reads.
    """
    image = await fetch_verified(http, params["url"], params["sha256"])
    try:
        log(f"{params['url']}: sha256 verified")
        if not await hw.verify_signature(image, params.get("signature", "")):
            raise CommandFailed(f"{params['url']}: signature does not verify")
        log("signature verified")
        if params.get("disk"):
            hw.set_boot_disk(str(params["disk"]))
        size = image.stat().st_size
        await hw.write_image(image, log)
    finally:
        image.unlink(missing_ok=True)
    record = {
        "image_sha256": params["sha256"],
        "image_bytes": size,
        "image_url": params["url"],
        "signature_verified": True,
        "installed_at": _now(),
    }
    if params.get("host_credential"):
        record["host_credential"] = str(params["host_credential"])
    await hw.record_install(record)
    log("install record written")
    return {"sha256": params["sha256"], "installed_at": record["installed_at"]}


async def run_tool(hw: Hardware, http: httpx.AsyncClient, params: dict, log: Log) -> dict:
    """Run one acceptance tool and return its raw output for Greenlight's parsers."""
    tool = params["tool"]
    if tool not in protocol.TOOLS:
        raise CommandFailed(f"unknown tool {tool!r}")
    code, output = await hw.run_tool(tool, params, log)
    return {"tool": tool, "exit_code": code, "output": output}


async def run_tools(hw: Hardware, http: httpx.AsyncClient, params: dict, log: Log) -> dict:
    """Run a gate's tools one after another; outputs keyed by each tool's key.

    Consecutive tools with the same "together" label run at the same time: the per-rail NCCL
    runs with one peer each use their own GPU and NIC, so running them one by one would only
    multiply the gate's length by the number of rails.
    """
    outputs: dict[str, str] = {}
    exit_codes: dict[str, int] = {}
    specs = params.get("tools", [])
    for spec in specs:
        if spec["tool"] not in protocol.TOOLS:
            raise CommandFailed(f"unknown tool {spec['tool']!r}", {"outputs": outputs})
    for batch in _batches(specs):
        results = await asyncio.gather(*(hw.run_tool(s["tool"], s, log) for s in batch))
        for spec, (code, output) in zip(batch, results, strict=True):
            key = spec.get("key", spec["tool"])
            exit_codes[key], outputs[key] = code, output
    return {"outputs": outputs, "exit_codes": exit_codes}


async def reset_gpus(hw: Hardware, http: httpx.AsyncClient, params: dict, log: Log) -> dict:
    """Reset the GPUs a gate named (XID 63/94 once); nothing may be running on them."""
    done = []
    for index in params.get("gpus", []):
        await hw.reset_gpu(int(index), log)
        log(f"GPU {index} reset")
        done.append(int(index))
    return {"reset": done}


def _batches(specs: list[dict]) -> list[list[dict]]:
    """Runs of consecutive specs sharing a "together" label; an unlabelled spec runs alone."""
    batches: list[list[dict]] = []
    for spec in specs:
        label = spec.get("together")
        if batches and label is not None and batches[-1][0].get("together") == label:
            batches[-1].append(spec)
        else:
            batches.append([spec])
    return batches


def _name(kind: str, device: dict) -> str:
    return device.get("name") or f"{kind} {device.get('index', '?')}"


Command = Callable[[Hardware, httpx.AsyncClient, dict, Log], Awaitable[dict]]
COMMANDS: dict[str, Command] = {
    protocol.INVENTORY: inventory,
    protocol.FLASH_FIRMWARE: flash_firmware,
    protocol.SECURE_ERASE: secure_erase,
    protocol.INSTALL_OS: install_os,
    protocol.RUN_TOOL: run_tool,
    protocol.RUN_TOOLS: run_tools,
    protocol.RESET_GPUS: reset_gpus,
}
