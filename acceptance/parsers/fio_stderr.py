"""The failures fio tells on stderr, outside its results, each naming the file (drive) at fault.

    fio: io_u error on file /dev/nvme5n1: Input/output error: write offset=2359502831616, buflen=4096
    verify: bad header rand_seed 2648634942919779000, wanted 53579819933698815 at file /dev/nvme0n1 offset 16910531584, length 130048 (...)
    md5: verify failed at file /dev/nvme1n1 offset 24691937280, length 0
    fio: pid=2232122, err=84/file:io_u.c:2213, func=io_u_queued_complete, error=Invalid or incomplete ...

People paste these lines with the results, instead of them (the results went to a JSON file), or
with results cut short; each names its drive, so each is a failure of that drive.
"""

from __future__ import annotations

import re

from .base import Finding, Severity, strip_launcher

IO_U_ERROR = re.compile(
    r"^fio: io_u error on file (?P<file>.+?): (?P<why>[^:]+?)"
    r"(?:: (?P<op>read|write|trim|sync|datasync) offset=(?P<offset>\d+).*)?\s*$"
)
# verify.c: "verify: bad magic header ...", "verify: bad header rand_seed ...", "<type>: verify
# failed at file ...", each ending with the file and the offset.
VERIFY_FAILED = re.compile(
    r"^(?P<who>[\w-]+): (?P<what>bad (?:magic )?header(?: \w+)?|verify failed)\b.*?"
    r" at file (?P<file>.+?) offset\s+(?P<offset>\d+)"
)
JOB_ERRNO = re.compile(r"^fio: pid=(?P<pid>\d+), err=(?P<err>\d+)/")


def device_of(filename: str) -> str:
    """The drive a file names: "/dev/nvme3n1" -> "nvme3n1"; several joined by ":" name the first."""
    return re.sub(r"^/dev/", "", filename.split(":")[0].strip())


def read_failures(text: str) -> tuple[list[Finding], list[int]]:
    """A finding per drive that fio's stderr blames, and the errnos its failed jobs exited with."""
    seen: dict[tuple[str, str], dict] = {}
    errnos: list[int] = []
    for raw in text.splitlines():
        line = strip_launcher(raw).strip()
        if m := IO_U_ERROR.match(line):
            how = m.group("why") + (f" on {m.group('op')} at offset {m.group('offset')}"
                                    if m.group("op") else "")  # fmt: skip
            _note(seen, device_of(m.group("file")), "fio_io_error", f"I/O error: {how}")
        elif m := VERIFY_FAILED.match(line):
            how = f"{m.group('who')}: {m.group('what')} at offset {m.group('offset')}"
            _note(seen, device_of(m.group("file")), "fio_verify_failed", f"verify failed: {how}")
        elif m := JOB_ERRNO.match(line):
            errnos.append(int(m.group("err")))
    findings = [
        Finding(
            part=device,
            kind="nvme",
            message=f"{device}: fio {note['first']}"
            + (f" (and {note['count'] - 1} more)" if note["count"] > 1 else ""),
            severity=Severity.CRITICAL,
            code=code,
        )
        for (device, code), note in seen.items()
    ]
    return findings, errnos


def _note(seen: dict[tuple[str, str], dict], device: str, code: str, message: str) -> None:
    note = seen.setdefault((device, code), {"first": message, "count": 0})
    note["count"] += 1
