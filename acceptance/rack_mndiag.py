"""The `dcgmi mndiag` part of the rack-wide verdict (issue 34), when the rack's profile asks for
it (`rack_gates: [mndiag]`): DCGM's multi-node diagnostic over every compute tray of the domain.

One compute tray, the head, runs `dcgmi mndiag --hostList <every tray> --json` once every tray
reported (acceptance.rack_gate). The report names each host by its own host name, and each tray
reported its own (`hostname`), so a host is named as its tray the way an IMEX address is
(rack_imex); a GPU is mndiag's entity id, mnubergemm's local rank, read as the GPU's index (one
rank per GPU, in order) to add its bus id and serial from the tray's nvidia-smi report.

A GPU that failed fails the rack, named by tray and GPU with mndiag's messages; so does a run
that failed with no GPU named (an MPI error) or an error of a host. No result, a run dcgmi could
not complete, a tray or a GPU the run has no result for, a GPU skipped or not run: unknown,
never a pass. Pure: the trays' parsed reports and mndiag's output in, findings out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .parsers import PARSERS
from .parsers.base import Finding, Severity

if TYPE_CHECKING:
    from .rack_fabric import TrayReport

UNKNOWN = "fabric_unknown"
TOOL = "dcgmi mndiag"


def judge(
    trays: Sequence[TrayReport],
    output: str | None,
    gpus_per_tray: int,
    head: str = "",
    why_missing: str = "",
) -> tuple[list[Finding], dict[str, Any]]:
    """Findings for the rack from the head tray's mndiag output (None: it has none), and
    metrics saying what ran where."""
    where = f" on tray {head}" if head else ""
    metrics: dict[str, Any] = {"required": True, "ran_on": head or None, "status": None}
    if output is None:
        why = why_missing or "no tray ran it"
        message = f"{TOOL}: no result ({why}); the rack's profile requires it"
        return [_unknown(TOOL, message)], metrics
    report = PARSERS["mndiag"](output)
    if report.error:
        message = f"{TOOL}{where}: {report.error}: the multi-node diagnostic is unknown"
        return [_unknown(TOOL, message)], metrics
    found = report.metrics
    metrics.update(status=found["status"], hosts=len(found["hosts"]))
    by_name = _by_hostname(trays)
    test, findings = found["test"], []
    seen: set[str] = set()
    for hostname, host in sorted(found["hosts"].items(), key=lambda item: item[1]["host_id"]):
        tray = _tray(hostname, by_name)
        if tray is None:
            message = f"{TOOL} host {hostname} is no compute tray that reported this host name"
            findings.append(_unknown(f"host {hostname}", message))
        else:
            seen.add(tray.name)
        findings.extend(_gpus(test, hostname, host, tray, gpus_per_tray))
    for tray in trays:
        if not tray.silent and tray.name not in seen:
            message = f"{tray.label}: {TOOL}{where} has no result for it"
            findings.append(_unknown(f"tray {tray.name}", message, tray.serial))
    for error in found["global_errors"]:
        findings.append(_run_error(error["host"], error["message"], by_name, where))
    named = any(f.severity == Severity.CRITICAL and f.code != UNKNOWN for f in findings)
    for finding in report.findings:
        # The test failed with no GPU or host error to show for it: an MPI error, say.
        if finding.code == "mndiag_failed" and not named:
            findings.append(Finding(TOOL, "node", f"{TOOL}{where}: {finding.message}",
                                    Severity.CRITICAL, "mndiag_failed"))  # fmt: skip
        elif finding.code == "mndiag_not_run":
            findings.append(_unknown(TOOL, f"{TOOL}{where}: {finding.message}"))
    metrics["gpus"] = sum(len(h["gpus"]) for h in found["hosts"].values())
    metrics["failed"] = [f.part for f in findings if f.code == "mndiag_gpu_failed"]
    return findings, metrics


def _run_error(
    host: str | None, message: str, by_name: dict[str, TrayReport], where: str
) -> Finding:
    """An error of the run not tied to a GPU, on its host's tray where it names a host."""
    tray = _tray(host, by_name) if host else None
    if tray is not None:
        return Finding(f"tray {tray.name}", "node", f"{tray.label}: {TOOL} error: {message}",
                       Severity.CRITICAL, "mndiag_run_error", tray.serial)  # fmt: skip
    part = f"host {host}" if host else TOOL
    said = f"{part}: {TOOL} error" if host else f"{TOOL}{where} error"
    return Finding(part, "node", f"{said}: {message}", Severity.CRITICAL, "mndiag_run_error")


def _by_hostname(trays: Sequence[TrayReport]) -> dict[str, TrayReport]:
    """Each tray by the host name it reported, and by that name's first label."""
    out: dict[str, TrayReport] = {}
    for tray in trays:
        name = tray.hostname.strip().lower()
        if name:
            out[name] = tray
            out.setdefault(name.split(".")[0], tray)
    return out


def _tray(hostname: str, by_name: dict[str, TrayReport]) -> TrayReport | None:
    """The tray a host name is: exact, or its first label (a short name against an FQDN)."""
    name = hostname.strip().lower()
    return by_name.get(name) or by_name.get(name.split(".")[0])


def _gpus(
    test: str, hostname: str, host: dict, tray: TrayReport | None, gpus_per_tray: int
) -> list[Finding]:
    """One host's GPUs: a failure named by tray and GPU, a missing or unrun result unknown."""
    out = []
    for gpu, facts in sorted(host["gpus"].items(), key=lambda item: int(item[0])):
        part, named, serial = _gpu_named(tray, hostname, int(gpu), facts.get("serial"))
        said = "; ".join(m for m in facts["warnings"] if m) or "no message"
        word = facts["status"]
        if word == "Fail":
            out.append(Finding(part, "gpu", f"{named}: {TOOL} {test} Fail: {said}",
                               Severity.CRITICAL, "mndiag_gpu_failed", serial))  # fmt: skip
        elif word == "Warn":
            out.append(Finding(part, "gpu", f"{named}: {TOOL} {test} Warn: {said}",
                               Severity.WARNING, "mndiag_gpu_warned", serial))  # fmt: skip
        elif word != "Pass":
            words = f"{TOOL} {test} {word}" if word else f"{TOOL} has no result for it"
            out.append(_unknown(part, f"{named}: {words}", serial, kind="gpu"))
    if tray is not None and len(host["gpus"]) < gpus_per_tray:
        message = f"{tray.label}: {TOOL} lists {len(host['gpus'])} of {gpus_per_tray} GPUs"
        out.append(_unknown(f"tray {tray.name}", message, tray.serial))
    return out


def _gpu_named(
    tray: TrayReport | None, hostname: str, index: int, serial: str | None
) -> tuple[str, str, str]:
    """The GPU's part, how a message names it (with bus id and serial where known), serial."""
    if tray is None:
        part = f"host {hostname} GPU {index}"
        return part, part + (f" (serial {serial})" if serial else ""), serial or ""
    smi = tray.smi.metrics.get("gpus", []) if tray.smi and not tray.smi.error else []
    gpu: dict[str, Any] = next((g for g in smi if g.get("index") == index), {})
    serial = serial or gpu.get("serial") or ""
    ids = ", ".join(x for x in (gpu.get("bus_id"), f"serial {serial}" if serial else "") if x)
    named = f"{tray.label} GPU {index}" + (f" ({ids})" if ids else "")
    return f"tray {tray.name} GPU {index}", named, serial


def _unknown(part: str, message: str, serial: str = "", kind: str = "node") -> Finding:
    return Finding(part, kind, message, Severity.CRITICAL, UNKNOWN, serial)
