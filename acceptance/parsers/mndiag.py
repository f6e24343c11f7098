"""`dcgmi mndiag --json` (DCGM 4.3+): DCGM's multi-node diagnostic (mnubergemm over MPI) across
up to 72 hosts, one result per host and GPU.

No captured output is public; the layout is the one DCGM's source writes (NVIDIA/DCGM 72fa3fe,
dcgmi/MnDiag.cpp, with modules/mndiag/MnDiagMpiMnubergemmRunner.cpp filling it):

    {
        "DCGM Diagnostic" : "DCGM Multi-Node Diagnostic",
        "hosts" : [{"host_id" : 0, "hostname" : "tray-01", "dcgm_version" : "4.6.0",
                    "driver_version" : "580.95.05", "num_entities" : 4,
                    "entities" : [{"entity_group" : "GPU", "entity_group_id" : 1,
                                   "entity_id" : 0, "serial_num"?, "device_id"?}, ...]}, ...],
        "metadata" : {"num_entities" : 72, "num_hosts" : 18},
        "test_categories" : [{"category" : "Multi-Node Tests", "tests" : [{
            "name" : "MNUBERGEMM", "status" : "Fail", "test_summary" : {"status" : "Fail"},
            "mpi_error"? : {"warning" : "Error: MPI exited with code: 1; ...",
                            "error_category" : "MPI"},
            "results" : [{"host_id" : 6, "entity_group_id" : 1, "entity_id" : 2,
                          "status" : "Fail", "warnings"? : [{"warning" : "CUDA Error : ...",
                          "error_id" : 1, "error_category" : 15, "error_severity" : 4}],
                          "info"? : ["..."]}, ...]}]}],
        "global_errors"? : [{"warning" : "...", "host_id" : 0, ...}],
        "runtime_error"? : "Error: Unable to complete multi-node diagnostic on host ..."
    }

Statuses are Pass, Fail, Warn (passed with warnings), Skip, Not Run and Unknown. A run dcgmi
could not complete says so in "runtime_error" and lists no hosts: it cannot be judged (an
error). A GPU that failed is named by its host's name (gethostname on that host) and its
entity id (mnubergemm's local rank); which tray a host is, the rack knows (rack_mndiag).
"""

from __future__ import annotations

from typing import Any, TypedDict

from .base import Finding, ParseResult, Severity, blank_reason, failed, load_json_object

TOOL = "mndiag"
NAME_KEY = "DCGM Diagnostic"
NAME = "DCGM Multi-Node Diagnostic"
STATUSES = ("Pass", "Fail", "Warn", "Skip", "Not Run", "Unknown")
PASSED = ("Pass", "Warn")
# What the runner writes where a host's node info was not found: no version at all.
NO_VERSION = ("unknown", "See nvidia-smi", "")


class GpuResult(TypedDict):
    """One GPU's result: its status word, serial where DCGM had one, and its messages."""

    status: str
    serial: str | None
    warnings: list[str]
    info: list[str]


class HostResult(TypedDict):
    """One host's part of the run, its GPUs by entity id (as strings, for JSON)."""

    host_id: int
    dcgm_version: str | None
    driver_version: str | None
    status: str
    gpus: dict[str, GpuResult]


class GlobalError(TypedDict):
    """An error of the run not tied to a GPU: its host where DCGM named one."""

    host: str | None
    message: str
    category: str


def parse(text: str) -> ParseResult:
    """Read `dcgmi mndiag --json` into hosts, GPUs and findings; a failed run is an error."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    data, reason = load_json_object(text)
    if data is None:
        return failed(TOOL, reason or "unreadable")
    name = data.get(NAME_KEY)
    if name != NAME:
        if isinstance(name, dict) or "DCGM GPU Diagnostic" in data:
            return failed(TOOL, "dcgmi diag output (one node), not dcgmi mndiag")
        return failed(TOOL, f"not dcgmi mndiag JSON: no '{NAME_KEY}': '{NAME}'")
    try:
        return _read(data)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        return failed(TOOL, f"malformed dcgmi mndiag JSON: {exc}")


def _read(data: dict[str, Any]) -> ParseResult:
    meta = data.get("metadata")
    if not isinstance(meta, dict) or "num_hosts" not in meta:
        return failed(TOOL, "no metadata with num_hosts (cut?)")
    runtime_error = str(data["runtime_error"]).strip() if data.get("runtime_error") else None
    names, hosts = _hosts(data.get("hosts"))
    if "hosts" in data and len(hosts) != int(meta["num_hosts"]):
        return failed(TOOL, f"lists {len(hosts)} of {meta['num_hosts']} hosts (cut?)")
    tests = _tests(data.get("test_categories"))
    if not tests and runtime_error is None:
        return failed(TOOL, "no multi-node test results in the output (cut?)")
    result = ParseResult(TOOL)
    test_name, status, mpi_error = None, None, None
    for test in tests:
        test_name, status = str(test["name"]), _status(test.get("status"))
        mpi = test.get("mpi_error")
        mpi_error = str(mpi["warning"]) if isinstance(mpi, dict) and mpi.get("warning") else None
        for entry in test.get("results") or []:
            _gpu(entry, names, hosts)
    counted = sum(1 for h in hosts.values() for g in h["gpus"].values() if g["status"])
    if len(tests) == 1 and runtime_error is None and counted < int(meta.get("num_entities", 0)):
        return failed(TOOL, f"results for {counted} of {meta['num_entities']} GPUs (cut?)")
    errors = _global_errors(data.get("global_errors"), names, mpi_error)
    for host in hosts.values():
        words = {gpu["status"] for gpu in host["gpus"].values()}
        host["status"] = next((s for s in ("Fail", "Warn") if s in words), "Pass" if words else "")
    result.version = _common(h["dcgm_version"] for h in hosts.values())
    result.driver_version = _common(h["driver_version"] for h in hosts.values())
    result.metrics = {
        "test": test_name,
        "status": status,
        "num_hosts": int(meta["num_hosts"]),
        "num_entities": int(meta.get("num_entities", 0)),
        "hosts": hosts,
        "failed_gpus": [
            f"{host} GPU {gpu}"
            for host, info in hosts.items()
            for gpu, facts in info["gpus"].items()
            if facts["status"] == "Fail"
        ],
        "runtime_error": runtime_error,
        "mpi_error": mpi_error,
        "global_errors": errors,
    }
    result.findings = _findings(str(test_name), status, hosts, mpi_error, errors)
    if runtime_error is not None:
        result.error = f"dcgmi mndiag could not complete the run: {runtime_error}"
    return result


def _hosts(value: Any) -> tuple[dict[int, str], dict[str, HostResult]]:
    """The hosts block: host ids to names, and each host's facts with its listed GPUs."""
    names: dict[int, str] = {}
    hosts: dict[str, HostResult] = {}
    for entry in value or []:
        host_id, hostname = int(entry["host_id"]), str(entry["hostname"])
        names[host_id] = hostname
        gpus: dict[str, GpuResult] = {}
        for entity in entry.get("entities") or []:
            if int(entity.get("entity_group_id", 1)) == 1:
                gpus[str(int(entity["entity_id"]))] = GpuResult(
                    status="", serial=entity.get("serial_num") or None, warnings=[], info=[]
                )
        hosts[hostname] = HostResult(
            host_id=host_id,
            dcgm_version=entry.get("dcgm_version"),
            driver_version=entry.get("driver_version"),
            status="",
            gpus=gpus,
        )
    return names, hosts


def _tests(categories: Any) -> list[dict[str, Any]]:
    tests = []
    for category in categories or []:
        for test in category.get("tests") or []:
            if "name" not in test or "status" not in test:
                raise ValueError("a test without its name or status")
            tests.append(test)
    return tests


def _status(word: Any) -> str:
    if word not in STATUSES:
        raise ValueError(f"unknown status {word!r}")
    return str(word)


def _gpu(entry: dict[str, Any], names: dict[int, str], hosts: dict[str, HostResult]) -> None:
    """File one result under its host and GPU (a host the hosts block lacks: "host #N")."""
    if int(entry.get("entity_group_id", 1)) != 1:
        return  # mnubergemm reports GPUs only; anything else is not a GPU's verdict
    host_id = int(entry["host_id"])
    hostname = names.get(host_id, f"host #{host_id}")
    host = hosts.setdefault(
        hostname,
        HostResult(host_id=host_id, dcgm_version=None, driver_version=None, status="", gpus={}),
    )
    gpu = host["gpus"].setdefault(
        str(int(entry["entity_id"])), GpuResult(status="", serial=None, warnings=[], info=[])
    )
    gpu["status"] = _status(entry.get("status"))
    gpu["warnings"] = [str(w.get("warning", "")) for w in entry.get("warnings") or []]
    gpu["info"] = [str(i) for i in entry.get("info") or []]


def _global_errors(value: Any, names: dict[int, str], mpi_error: str | None) -> list[GlobalError]:
    """The run's errors tied to no GPU; the MPI error DCGM repeats here is kept once."""
    out = []
    for entry in value or []:
        message, category = str(entry.get("warning", "")), str(entry.get("error_category", ""))
        if category == "MPI" and "host_id" not in entry and message == mpi_error:
            continue
        host_id = entry.get("host_id")
        host = names.get(int(host_id), f"host #{host_id}") if host_id is not None else None
        out.append(GlobalError(host=host, message=message, category=category))
    return out


def _findings(
    test: str,
    status: str | None,
    hosts: dict[str, HostResult],
    mpi_error: str | None,
    errors: list[GlobalError],
) -> list[Finding]:
    findings = []
    for hostname, host in hosts.items():
        for gpu, facts in host["gpus"].items():
            part, word = f"{hostname} GPU {gpu}", facts["status"]
            said = "; ".join(m for m in facts["warnings"] if m) or "no message"
            if word == "Fail":
                findings.append(Finding(part, "gpu", f"{part}: {test} Fail: {said}",
                                        Severity.CRITICAL, "mndiag_gpu_failed",
                                        facts["serial"] or ""))  # fmt: skip
            elif word == "Warn":
                findings.append(Finding(part, "gpu", f"{part}: {test} Warn: {said}",
                                        Severity.WARNING, "mndiag_gpu_warned",
                                        facts["serial"] or ""))  # fmt: skip
            elif word not in PASSED:
                findings.append(Finding(part, "gpu", f"{part}: {test} {word or 'no result'}",
                                        Severity.WARNING, "mndiag_gpu_not_run",
                                        facts["serial"] or ""))  # fmt: skip
    for error in errors:
        part = error["host"] or "mndiag"
        findings.append(Finding(part, "node", f"{part}: {error['message']}", Severity.CRITICAL,
                                "mndiag_run_error"))  # fmt: skip
    gpu_failed = any(f.code == "mndiag_gpu_failed" for f in findings)
    if status == "Fail" and not gpu_failed:
        why = mpi_error or (errors[0]["message"] if errors else "no GPU or error named")
        findings.append(Finding("mndiag", "node", f"{test} Fail: {why}", Severity.CRITICAL,
                                "mndiag_failed"))  # fmt: skip
    elif status is not None and status not in PASSED and status != "Fail":
        findings.append(Finding("mndiag", "node", f"{test} {status}: the test did not run",
                                Severity.CRITICAL, "mndiag_not_run"))  # fmt: skip
    return findings


def _common(values: Any) -> str | None:
    """The one value every host reports, if they agree and DCGM knew it."""
    seen = {v for v in values if v not in NO_VERSION and v is not None}
    return next(iter(seen)) if len(seen) == 1 else None
