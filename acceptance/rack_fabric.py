"""The rack-wide NVLink fabric verdict of a GB200/GB300 NVL72 domain (or two NVL36 cabled as one).

A compute tray can pass every single-node gate while the domain is broken, so the domain is
judged from every tray's reports together: its GPUs' fabric facts (`nvidia-smi -q`), its view of
the IMEX domain (`nvidia-imex-ctl -N`) and its link states (`nvidia-smi nvlink -s`). It passes
only when every GPU registered with the fabric (Completed, Success) with healthy fabric health,
all of them in one cluster UUID and one clique, every tray is READY and connected in IMEX, and
every link is up at the expected speed. Each finding names the tray, and the GPU (index, bus id,
serial) or the link, that breaks it.

A missing observation is unknown, never a pass: a tray that reported nothing, a report that
cannot be read, a GPU without a Fabric section (NVIDIA's own infra controller once read a lost
answer from its NVLink manager as "synced"). Unknowns alone make the verdict an error; with
faults beside them it fails, and both are listed.

Pure: parsed reports in, a GateVerdict out; the rack domain decides which trays belong.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from . import rack_imex
from .choices import Verdict
from .parsers import PARSERS, ParseResult
from .parsers import fabric_state as fs
from .parsers.base import Finding, Severity
from .verdicts import GateVerdict, conclude

# The tools a compute tray reports for this verdict, by their parser's name.
TRAY_TOOLS = ("nvidia-smi", "imex", "nvlink")
# Tools judged only rack-wide: no single-node gate takes their upload (an IMEX view says
# nothing alone, dcgmi mndiag spans the rack's trays; the rack domain files them with the
# rack's verdict).
RACK_ONLY_TOOLS = ("imex", "mndiag")
# A link this much below the expected speed trained down (speeds print rounded).
SPEED_TOLERANCE = 0.99
UNKNOWN = "fabric_unknown"


@dataclass(frozen=True)
class DomainShape:
    """What a whole NVLink domain holds (NVL72: 18 compute trays of 4 GPUs, 18 links each)."""

    trays: int = 18
    gpus_per_tray: int = 4
    links_per_gpu: int = 18
    # Each link's speed in GB/s as `nvlink -s` prints it; None: the fastest link in the domain.
    link_gbps: float | None = None


NVL72 = DomainShape()


@dataclass(frozen=True)
class TrayReport:
    """One compute tray's reports (None: it did not report that tool), parsed."""

    name: str
    serial: str = ""
    smi: ParseResult | None = None
    imex: ParseResult | None = None
    nvlink: ParseResult | None = None
    # The tray's address in IMEX's node list, so an IMEX node can be named as its tray.
    imex_address: str = ""
    # The tray's own host name (`hostname`), so a dcgmi mndiag host is named as its tray.
    hostname: str = ""

    @classmethod
    def from_outputs(
        cls,
        name: str,
        outputs: dict[str, str],
        serial: str = "",
        imex_address: str = "",
        hostname: str = "",
    ) -> TrayReport:
        """Parse a tray's raw outputs, keyed by TRAY_TOOLS; a tool it did not report stays None."""
        parsed = {tool: PARSERS[tool](outputs[tool]) for tool in TRAY_TOOLS if tool in outputs}
        return cls(
            name,
            serial,
            parsed.get("nvidia-smi"),
            parsed.get("imex"),
            parsed.get("nvlink"),
            imex_address,
            hostname,
        )

    @property
    def label(self) -> str:
        """How findings name the tray: its name, and its serial where known."""
        return f"tray {self.name}" + (f" (serial {self.serial})" if self.serial else "")

    @property
    def silent(self) -> bool:
        """True when the tray reported nothing at all."""
        return self.smi is None and self.imex is None and self.nvlink is None


def judge_rack_fabric(trays: Sequence[TrayReport], shape: DomainShape = NVL72) -> GateVerdict:
    """The domain's verdict from every compute tray's reports, naming what breaks it."""
    verdict = GateVerdict(Verdict.ERROR)
    findings: list[Finding] = []
    if len(trays) < shape.trays:
        message = f"rack: {len(trays)} of {shape.trays} compute trays known to the verdict"
        findings.append(_unknown("rack", message))
    # (cluster UUID, clique id) of each registered GPU, with the GPU's part, name and serial.
    members: list[tuple[tuple, str, str, str]] = []
    speeds = _speeds(trays)
    expected_gbps = shape.link_gbps or (max(speeds) if speeds else None)
    for tray in trays:
        if tray.silent:
            message = f"{tray.label}: reported nothing (no nvidia-smi, IMEX or NVLink status)"
            findings.append(_unknown(f"tray {tray.name}", message, tray.serial))
            continue
        gpus = _gpus(tray, shape, findings)
        for gpu in gpus:
            key = _domain_key(tray, gpu, findings)
            if key:
                members.append((key, *_gpu_part(tray, gpu), gpu.get("serial") or ""))
        _links(tray, gpus, shape, expected_gbps, findings)
    findings.extend(_one_clique(members))
    findings.extend(rack_imex.judge(trays, shape.trays))
    verdict.findings = findings
    unknown = [f.message for f in findings if f.code == UNKNOWN]
    verdict.metrics = {
        "trays": {"expected": shape.trays, "reported": sum(not t.silent for t in trays)},
        "gpus_in_domain": len(members),
        "domain": _domain_metrics(members),
        "link_gbps_expected": expected_gbps,
        "unknown": unknown,
    }
    faults = [f for f in findings if f.severity == Severity.CRITICAL and f.code != UNKNOWN]
    if unknown and not faults:
        verdict.error = f"the domain's fabric is unknown: {unknown[0]}" + (
            f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        )
    return conclude(verdict)


def _gpus(tray: TrayReport, shape: DomainShape, findings: list[Finding]) -> list[dict]:
    """The tray's GPUs from its nvidia-smi report, each judged on its own fabric facts."""
    if tray.smi is None or tray.smi.error:
        why = f"unreadable ({tray.smi.error})" if tray.smi else "not reported"
        message = f"{tray.label}: nvidia-smi -q {why}: its GPUs' fabric state is unknown"
        findings.append(_unknown(f"tray {tray.name}", message, tray.serial))
        return []
    gpus = list(tray.smi.metrics.get("gpus", []))
    if len(gpus) < shape.gpus_per_tray:
        message = f"{tray.label}: nvidia-smi sees {len(gpus)} of {shape.gpus_per_tray} GPUs"
        findings.append(_fault(f"tray {tray.name}", message, "gpu_missing", tray.serial))
    for gpu in gpus:
        fabric = gpu.get("fabric")
        if fabric is None:
            findings.append(_gpu_finding(tray, gpu, "no Fabric section in its report", UNKNOWN))
        elif not fabric.get("state"):
            words = "reports no NVLink fabric (N/A)"
            findings.append(_gpu_finding(tray, gpu, words, "fabric_not_supported"))
        elif fabric["state"].lower() != fs.COMPLETED:
            words = f"fabric state {fabric['state']}, not Completed"
            findings.append(_gpu_finding(tray, gpu, words, "fabric_not_completed"))
        elif not fs.registered(fabric):
            words = f"fabric registration completed with status '{fabric.get('status')}'"
            findings.append(_gpu_finding(tray, gpu, words, "fabric_registration_failed"))
        for fault in fs.faults(fabric or {}):
            if not fault.startswith("fabric registration"):
                findings.append(_gpu_finding(tray, gpu, fault, "fabric_unhealthy"))
    return gpus


def _domain_key(tray: TrayReport, gpu: dict, findings: list[Finding]) -> tuple | None:
    """The (cluster UUID, clique) a registered GPU is in; None (with a finding) if it has none."""
    fabric = gpu.get("fabric") or {}
    if not fs.registered(fabric):
        return None
    if not fs.in_a_domain(fabric):
        words = f"cluster UUID {fabric.get('cluster_uuid') or 'N/A'}: in no NVLink domain"
        findings.append(_gpu_finding(tray, gpu, words, "fabric_no_domain"))
        return None
    if fabric.get("clique_id") is None:
        findings.append(_gpu_finding(tray, gpu, "no clique id in its Fabric section", UNKNOWN))
        return None
    return (fabric["cluster_uuid"], fabric["clique_id"])


def _one_clique(members: list[tuple[tuple, str, str, str]]) -> list[Finding]:
    """Every registered GPU in the domain's one cluster and clique: the others are named."""
    if not members:
        return []
    counts = Counter(key for key, *_ in members)
    (cluster, clique), held = counts.most_common(1)[0]
    out = []
    for (other_cluster, other_clique), part, named, serial in members:
        if (other_cluster, other_clique) == (cluster, clique):
            continue
        place = f"clique {other_clique}" + (
            f" of cluster {other_cluster}" if other_cluster != cluster else ""
        )
        message = (
            f"{named}: in {place}; the domain is clique {clique} of cluster {cluster} "
            f"({held} of {len(members)} GPUs)"
        )
        out.append(Finding(part, "gpu", message, Severity.CRITICAL, "fabric_other_clique", serial))
    return out


def _domain_metrics(members: list[tuple[tuple, str, str, str]]) -> dict:
    """How many GPUs each (cluster, clique) holds: one entry when the domain is whole."""
    counts = Counter(key for key, *_ in members)
    return {f"{cluster}/{clique}": held for (cluster, clique), held in counts.most_common()}


def _speeds(trays: Sequence[TrayReport]) -> list[float]:
    """Every link speed the domain's `nvlink -s` reports print, for the expected speed."""
    return [
        link["gbps"]
        for tray in trays
        if tray.nvlink and not tray.nvlink.error
        for info in tray.nvlink.metrics.get("gpus", {}).values()
        if isinstance(info, dict) and isinstance(info.get("links"), dict)
        for link in info["links"].values()
        if isinstance(link, dict) and link.get("gbps")
    ]


def _links(
    tray: TrayReport,
    gpus: list[dict],
    shape: DomainShape,
    expected: float | None,
    findings: list[Finding],
) -> None:
    """Every GPU's links up and at the expected speed, per `nvidia-smi nvlink -s`."""
    report = tray.nvlink
    if report is None or report.error or report.metrics.get("source") != "nvidia-smi":
        why = "not reported" if report is None else f"unreadable ({report.error})"
        if report is not None and not report.error:
            why = "not an nvidia-smi nvlink -s report"
        message = f"{tray.label}: nvidia-smi nvlink -s {why}: its links are unknown"
        findings.append(_unknown(f"tray {tray.name}", message, tray.serial))
        return
    by_index = report.metrics["gpus"]
    by_uuid = {info.get("uuid"): info for info in by_index.values()}
    subjects = gpus or [{"index": int(i), "bus_id": "", "serial": None} for i in by_index]
    for gpu in subjects:
        info = by_uuid.get(gpu.get("uuid")) if gpu.get("uuid") else None
        info = info or by_index.get(str(gpu["index"]))
        if info is None:
            findings.append(_gpu_finding(tray, gpu, "no NVLink status in its report", UNKNOWN))
            continue
        links = {int(n): link for n, link in info["links"].items() if "gbps" in link}
        if len(links) < shape.links_per_gpu:
            words = f"{len(links)} of {shape.links_per_gpu} NVLinks in its status report"
            findings.append(_gpu_finding(tray, gpu, words, "nvlink_missing", "nvlink"))
        for number, link in sorted(links.items()):
            if link["gbps"] is None:
                findings.append(_link_finding(tray, gpu, number, "inactive", "nvlink_down"))
            elif expected and link["gbps"] < expected * SPEED_TOLERANCE:
                words = f"at {link['gbps']:g} GB/s, below the domain's {expected:g} GB/s"
                findings.append(_link_finding(tray, gpu, number, words, "nvlink_slow"))


def _gpu_part(tray: TrayReport, gpu: dict) -> tuple[str, str]:
    """The GPU's part name and how a message names it: tray, index, bus id and serial."""
    part = f"tray {tray.name} GPU {gpu['index']}"
    ids = ", ".join(x for x in (gpu.get("bus_id"), _serial(gpu)) if x)
    return part, f"{tray.label} GPU {gpu['index']}" + (f" ({ids})" if ids else "")


def _gpu_finding(tray: TrayReport, gpu: dict, words: str, code: str, kind: str = "gpu") -> Finding:
    part, named = _gpu_part(tray, gpu)
    return Finding(
        part, kind, f"{named}: {words}", Severity.CRITICAL, code, gpu.get("serial") or ""
    )


def _link_finding(tray: TrayReport, gpu: dict, link: int, words: str, code: str) -> Finding:
    part, named = _gpu_part(tray, gpu)
    message = f"{named} link {link}: NVLink {words}"
    return Finding(f"{part} link {link}", "nvlink", message, Severity.CRITICAL, code,
                   gpu.get("serial") or "")  # fmt: skip


def _serial(gpu: dict) -> str:
    return f"serial {gpu['serial']}" if gpu.get("serial") else ""


def _fault(part: str, message: str, code: str, serial: str = "") -> Finding:
    return Finding(part, "node", message, Severity.CRITICAL, code, serial)


def _unknown(part: str, message: str, serial: str = "") -> Finding:
    return Finding(part, "node", message, Severity.CRITICAL, UNKNOWN, serial)
