"""`fio --output-format=json` (and, through fio_text, its text output): per job read/write bandwidth (KiB/s), IOPS, latency and errors.

Failures fio tells on stderr (fio_stderr: I/O errors, verify failures) fail the drive they name,
whether the results come with them, were cut short, or went elsewhere: a shown failure is never
lost to an unreadable rest.
"""

from __future__ import annotations

from . import fio_stderr, fio_text
from .base import Finding, ParseResult, Severity, blank_reason, failed, load_json_object

TOOL = "fio"
KIB_PER_MB = 1000 * 1000 / 1024  # fio's "bw" is KiB/s; SLAs are written in MB/s


def parse(text: str) -> ParseResult:
    """Parse fio JSON into per-job and per-device throughput, and findings for failed jobs."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    told, errnos = fio_stderr.read_failures(text)
    result = _results(text)
    if not told:
        return result
    if result.error:
        # The results are missing or cut, but the failures shown are read (never a pass).
        unread = result.error
        result = _summed(ParseResult(TOOL, version=result.version), [], {})
        result.metrics.update({"complete": False, "results_unread": unread})
    # A job's own error already names its drive and errno; the stderr line for it adds nothing.
    erred = {f.part for f in result.findings if f.code == "fio_job_error"}
    result.findings.extend(f for f in told if f.code != "fio_io_error" or f.part not in erred)
    result.metrics["stderr_errnos"] = errnos
    return result


def _results(text: str) -> ParseResult:
    """The results themselves, in JSON or text."""
    if "{" not in text[:4000] and fio_text.looks_like_text(text):
        return _from_text(text)
    data, reason = load_json_object(text)
    if data is None:
        return failed(TOOL, reason or "unreadable")
    jobs = data.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        return failed(TOOL, "not fio JSON: no jobs")
    version = str(data.get("fio version", "")).removeprefix("fio-") or None
    result = ParseResult(TOOL, version=version)
    per_job = []
    for job in jobs:
        if not isinstance(job, dict) or "read" not in job or "write" not in job:
            return failed(TOOL, "fio job without read/write sections")
        per_job.append(_job(job))
    disk_util = {
        d.get("name"): d.get("util") for d in data.get("disk_util") or [] if isinstance(d, dict)
    }
    return _summed(result, per_job, disk_util)


def _from_text(text: str) -> ParseResult:
    """fio's text output: the device is the one disk in Disk stats, else the job's name."""
    read = fio_text.parse(text)
    if isinstance(read, ParseResult):
        return read
    jobs, disks, version = read
    result = ParseResult(TOOL, version=version)
    device = disks[0] if len(disks) == 1 else ""
    for job in jobs:
        job["device"] = device or job["name"]
        job["rw"] = _direction(job)
        job["bs"] = ""
    return _summed(result, jobs, {})


def _summed(result: ParseResult, jobs: list[dict], disk_util: dict) -> ParseResult:
    """The jobs' throughput per device and in all, and a finding per job that erred.

    One place for both of fio's output formats, so JSON and text are judged alike.
    """
    devices: dict[str, dict[str, float]] = {}
    for job in jobs:
        totals = devices.setdefault(job["device"], {"read_mbps": 0.0, "write_mbps": 0.0})
        totals["read_mbps"] += job["read_mbps"]
        totals["write_mbps"] += job["write_mbps"]
        if job["error"]:
            result.findings.append(_job_error(job))
    result.metrics = {
        "jobs": jobs,
        "devices": devices,
        "read_mbps": round(sum(j["read_mbps"] for j in jobs), 1),
        "write_mbps": round(sum(j["write_mbps"] for j in jobs), 1),
        "disk_util": disk_util,
    }
    return result


def _direction(job: dict) -> str:
    """What the judge calls the job: read, write, or rw when it did both."""
    if job["read_mbps"] and job["write_mbps"]:
        return "rw"
    return "write" if job["write_mbps"] else "read"


def _job_error(entry: dict) -> Finding:
    return Finding(
        part=entry["device"],
        kind="nvme",
        message=f"{entry['device']}: fio job {entry['name']} failed with error "
        f"{entry['error']} ({_errno_name(entry['error'])})",
        severity=Severity.CRITICAL,
        code="fio_job_error",
    )


def _job(job: dict) -> dict:
    options = job.get("job options") or {}
    filename = str(options.get("filename", "")) or str(job.get("jobname", "job"))
    read, write = job["read"], job["write"]
    return {
        "name": str(job.get("jobname", "")),
        "device": _device(filename),
        "rw": options.get("rw", ""),
        "bs": options.get("bs", ""),
        "error": int(job.get("error") or 0),
        "read_mbps": round(float(read.get("bw", 0)) / KIB_PER_MB, 1),
        "write_mbps": round(float(write.get("bw", 0)) / KIB_PER_MB, 1),
        "read_iops": round(float(read.get("iops", 0)), 1),
        "write_iops": round(float(write.get("iops", 0)), 1),
        "read_lat_mean_us": _lat_us(read),
        "write_lat_mean_us": _lat_us(write),
    }


def _device(filename: str) -> str:
    return fio_stderr.device_of(filename)


def _lat_us(section: dict) -> float | None:
    lat = section.get("lat_ns") or {}
    mean = lat.get("mean")
    return round(float(mean) / 1000, 1) if mean else None


def _errno_name(code: int) -> str:
    return {5: "EIO, I/O error", 28: "ENOSPC", 61: "ENODATA", 84: "EILSEQ"}.get(code, "errno")
