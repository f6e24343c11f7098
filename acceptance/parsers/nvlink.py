"""NVLink state per GPU and link: `nvidia-smi nvlink -s` / `-e` and `dcgmi nvlink -s`.

    GPU 3: Tesla V100-SXM2-32GB (UUID: ...)            nvidia-smi nvlink -s
             Link 0: 25.781 GB/s
             Link 3: <inactive>
    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)        nvidia-smi nvlink -e
             Link 0: Replay Errors: 0
             Link 0: Recovery Errors: 0
             Link 0: CRC Errors: 0
    GPUs:                                               dcgmi nvlink -s
        gpuId 0:
            U U D U U U U U U U U U
    Key: Up=U, Down=D, Disabled=X, Not Supported=_
    | NVLINK Error Counts                     |         dcgmi nvlink -e -g 0 (or -j: the same
    | GPU 0                                   |         table as {"header": [..., "GPU 0"],
    +=================+=======================+          "body": {"Link 0": {"children": ...}}})
    | Link 0          |                       |
    | -> CRC FLIT Error | 0                   |
    | -> Recovery Error | 0                   |

The gate rule, each finding naming the GPU and the link: a link down or inactive fails; a link
slower than its GPU's fastest link fails (it trained down); a recovery error fails (the link
retrained under load); CRC (FLIT or data) and replay errors are warnings (the link corrected
them). Pastes elide lines ("[...]", "...."): what is shown is read. dcgmi's "Key:" line ends its
status report and a border its error table; a report without it was cut. dcgmi writes "Not
Supported" for a counter a GPU lacks: not read, not a finding.
"""

from __future__ import annotations

import json
import re

from .base import Finding, ParseResult, Severity, blank_reason, failed, strip_launcher

TOOL = "nvlink"
GPU_HEADER = re.compile(r"^GPU (?P<gpu>\d+): (?P<name>.*?)\s*\(UUID: (?P<uuid>[^)]*)\)\s*$")
SPEED = re.compile(r"^Link (?P<link>\d+): (?:(?P<gbps>[\d.]+) GB/s|<(?P<state>inactive)>)\s*$")
COUNTER = re.compile(r"^Link (?P<link>\d+): (?P<name>Replay|Recovery|CRC) Errors: (?P<n>\d+)\s*$")
DCGMI_GPU = re.compile(r"^gpuId (?P<gpu>\d+):\s*$")
DCGMI_STATES = re.compile(r"^(?:[UDX_] )*[UDX_]$")
DCGMI_KEY = "Key: Up=U, Down=D"
DCGMI_WORDS = {"U": "up", "D": "down", "X": "disabled", "_": "not supported"}
DCGMI_ERRORS_HEADER = "NVLINK Error Counts"
DCGMI_CELL = re.compile(r"^\|\s*(?P<key>[^|]*?)\s*\|\s*(?P<value>[^|]*?)\s*\|$")
DCGMI_TITLE = re.compile(r"^\|\s*(?P<title>[^|]*?)\s*\|$")
# dcgmi's counter names and Greenlight's.
DCGMI_COUNTERS = {
    "CRC FLIT Error": "crc_flit_errors",
    "CRC Data Error": "crc_data_errors",
    "Replay Error": "replay_errors",
    "Recovery Error": "recovery_errors",
}
DCGMI_FINDINGS = {
    "crc_flit_errors": ("CRC FLIT", "nvlink_crc_errors"),
    "crc_data_errors": ("CRC data", "nvlink_crc_errors"),
    "replay_errors": ("Replay", "nvlink_replay_errors"),
    "recovery_errors": ("Recovery", "nvlink_recovery_errors"),
}
# Errors a link corrected itself (warnings) and the one that retrained it (a failure).
WARN_COUNTERS = {"Replay", "CRC"}


def parse(text: str) -> ParseResult:
    """Read an NVLink status or error-counter report into links per GPU, and findings."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    if text.lstrip().startswith("{"):
        return _dcgmi_errors_json(text)
    lines = [strip_launcher(raw).strip() for raw in text.splitlines()]
    if any(DCGMI_ERRORS_HEADER in line for line in lines):
        return _dcgmi_errors_table(lines)
    if any(DCGMI_GPU.match(line) for line in lines):
        return _dcgmi(lines)
    return _nvidia_smi(lines)


def _nvidia_smi(lines: list[str]) -> ParseResult:
    gpus: dict[int, dict] = {}
    current: dict | None = None
    for line in lines:
        if m := GPU_HEADER.match(line):
            current = gpus.setdefault(
                int(m.group("gpu")), {"name": m.group("name"), "uuid": m.group("uuid"), "links": {}}
            )
        elif (m := SPEED.match(line)) and current is not None:
            link = current["links"].setdefault(int(m.group("link")), {})
            link["gbps"] = float(m.group("gbps")) if m.group("gbps") else None
        elif (m := COUNTER.match(line)) and current is not None:
            link = current["links"].setdefault(int(m.group("link")), {})
            link[m.group("name").lower() + "_errors"] = int(m.group("n"))
        elif line.startswith("Link ") and current is not None:
            return failed(TOOL, f"unreadable link line (truncated?): {line[:80]}")
    if not gpus:
        return failed(TOOL, "not an NVLink report: no 'GPU n: ... (UUID: ...)' header")
    for gpu, info in gpus.items():
        if not info["links"]:
            return failed(TOOL, f"GPU {gpu} has no link lines (truncated?)")
        if _counters_cut(info):
            return failed(TOOL, f"GPU {gpu}: a link shows only some error counters (truncated?)")
    result = ParseResult(TOOL)
    result.metrics = {"source": "nvidia-smi", "gpus": {str(g): i for g, i in sorted(gpus.items())}}
    for gpu, info in sorted(gpus.items()):
        result.findings.extend(_smi_findings(gpu, info))
    return result


def _counters_cut(info: dict) -> bool:
    """True when some link has error counters but not all three (the report stops mid-link)."""
    names = {"replay_errors", "recovery_errors", "crc_errors"}
    return any(names & set(link) and not names <= set(link) for link in info["links"].values())


def _smi_findings(gpu: int, info: dict) -> list[Finding]:
    findings = []
    speeds = [link["gbps"] for link in info["links"].values() if link.get("gbps")]
    fastest = max(speeds) if speeds else None
    for number, link in sorted(info["links"].items()):
        part = f"GPU {gpu} link {number}"
        if "gbps" in link and link["gbps"] is None:
            findings.append(
                _finding(part, f"{part}: NVLink inactive", Severity.CRITICAL, "nvlink_down")
            )
        elif fastest and link.get("gbps") and link["gbps"] < fastest:
            message = f"{part}: NVLink at {link['gbps']:g} GB/s, below the GPU's {fastest:g} GB/s"
            findings.append(_finding(part, message, Severity.CRITICAL, "nvlink_slow"))
        for name in ("Recovery", "Replay", "CRC"):
            count = link.get(f"{name.lower()}_errors") or 0
            if count:
                severity = Severity.WARNING if name in WARN_COUNTERS else Severity.CRITICAL
                message = f"{part}: {count} NVLink {name} errors"
                findings.append(_finding(part, message, severity, f"nvlink_{name.lower()}_errors"))
    return findings


def _dcgmi(lines: list[str]) -> ParseResult:
    gpus: dict[int, list[str]] = {}
    current: int | None = None
    for line in lines:
        if m := DCGMI_GPU.match(line):
            current = int(m.group("gpu"))
            gpus[current] = []
        elif current is not None and DCGMI_STATES.match(line):
            gpus[current] = line.split()
        elif line.startswith("NvSwitches:"):
            current = None
    if not any(line.startswith(DCGMI_KEY) for line in lines):
        return failed(TOOL, "truncated: the dcgmi NvLink report has no 'Key:' line at its end")
    if not gpus or any(not states for states in gpus.values()):
        return failed(TOOL, "a dcgmi gpuId shows no link states (truncated?)")
    result = ParseResult(TOOL)
    result.metrics = {
        "source": "dcgmi",
        "gpus": {
            str(g): {str(n): DCGMI_WORDS[s] for n, s in enumerate(st)} for g, st in gpus.items()
        },
    }
    for gpu, states in sorted(gpus.items()):
        for number, state in enumerate(states):
            if state == "D":
                part = f"GPU {gpu} link {number}"
                result.findings.append(
                    _finding(part, f"{part}: NVLink down", Severity.CRITICAL, "nvlink_down")
                )
    return result


def _dcgmi_errors_json(text: str) -> ParseResult:
    try:
        report = json.loads(text)
    except json.JSONDecodeError as exc:
        return failed(TOOL, f"dcgmi -j output that is not JSON (truncated?): {exc.msg}")
    header = report.get("header") if isinstance(report, dict) else None
    body = report.get("body") if isinstance(report, dict) else None
    if not isinstance(header, list) or DCGMI_ERRORS_HEADER not in header:
        return failed(TOOL, "not a dcgmi nvlink -e report: no 'NVLINK Error Counts' header")
    gpu = _dcgmi_gpu(" ".join(str(h) for h in header))
    if gpu is None or not isinstance(body, dict) or not body:
        return failed(TOOL, "the dcgmi NVLink error report names no GPU or no links")
    links: dict[int, dict[str, int | None]] = {}
    for name, entry in body.items():
        number = _dcgmi_link(name)
        children = entry.get("children") if isinstance(entry, dict) else None
        if number is None or not isinstance(children, dict):
            return failed(TOOL, f"unreadable link entry in the dcgmi report: {str(name)[:40]}")
        links[number] = {
            DCGMI_COUNTERS[k]: _count(v.get("value") if isinstance(v, dict) else None)
            for k, v in children.items()
            if k in DCGMI_COUNTERS
        }
    return _dcgmi_errors_result(gpu, links)


def _dcgmi_errors_table(lines: list[str]) -> ParseResult:
    gpu: int | None = None
    links: dict[int, dict[str, int | None]] = {}
    current: dict[str, int | None] | None = None
    closed = False
    for line in lines:
        if links and line.startswith("+-") and line.rstrip("+-") == "":
            closed = True
        elif (m := DCGMI_CELL.match(line)) and m.group("key").startswith("->"):
            if current is None:
                return failed(TOOL, f"a dcgmi counter before any link: {line[:80]}")
            name = m.group("key").removeprefix("->").strip()
            if name in DCGMI_COUNTERS:
                current[DCGMI_COUNTERS[name]] = _count(m.group("value"))
        elif (m := DCGMI_CELL.match(line)) and (number := _dcgmi_link(m.group("key"))) is not None:
            current = links.setdefault(number, {})
        elif (m := DCGMI_TITLE.match(line)) and gpu is None:
            gpu = _dcgmi_gpu(m.group("title"))
    if gpu is None:
        return failed(TOOL, "the dcgmi NVLink error report names no GPU")
    if not links:
        return failed(TOOL, f"GPU {gpu}: the dcgmi NVLink error report shows no links")
    if not closed:
        return failed(TOOL, "truncated: the dcgmi NVLink error table has no closing border")
    return _dcgmi_errors_result(gpu, links)


def _dcgmi_errors_result(gpu: int, links: dict[int, dict[str, int | None]]) -> ParseResult:
    for number, counters in links.items():
        if set(counters) != set(DCGMI_COUNTERS.values()):
            return failed(TOOL, f"GPU {gpu} link {number} shows only some error counters (cut?)")
    result = ParseResult(TOOL)
    result.metrics = {
        "source": "dcgmi",
        "gpus": {str(gpu): {"links": {str(n): c for n, c in sorted(links.items())}}},
    }
    for number, counters in sorted(links.items()):
        part = f"GPU {gpu} link {number}"
        for key, count in counters.items():
            if count:
                words, code = DCGMI_FINDINGS[key]
                severity = Severity.CRITICAL if key == "recovery_errors" else Severity.WARNING
                message = f"{part}: {count} NVLink {words} errors"
                result.findings.append(_finding(part, message, severity, code))
    return result


def _dcgmi_gpu(text: str) -> int | None:
    m = re.search(r"\bGPU (\d+)\b", text)
    return int(m.group(1)) if m else None


def _dcgmi_link(text: str) -> int | None:
    m = re.fullmatch(r"Link (\d+)", str(text).strip())
    return int(m.group(1)) if m else None


def _count(value: object) -> int | None:
    """A counter's value; None where dcgmi says it is not supported or not specified."""
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() else None


def _finding(part: str, message: str, severity: Severity, code: str) -> Finding:
    return Finding(part=part, kind="nvlink", message=message, severity=severity, code=code)
