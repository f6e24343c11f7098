"""`dcgmi diag -r N` plain-text tables, in the 3.x layout ("Pass - All", "Fail - GPU 2") and
the 4.x layout (one "GPU0: Pass" line per GPU under each test).

    | PCIe                      | Fail - GPU 3                                   |
    | Warning                   | GPU 3 PCIe replay rate ...                      |
    | pcie                      | Fail                                           |
    |                           | GPU3: Fail                                     |

Users' pastes elide lines ("...") and stop early: a table without its closing border is read
only if it already shows a failure (that is never a pass); otherwise it is an error.

When a deployment check stops the run, dcgmi prints only an Error row under the section header,
with no test row before it:

    |-----  Deployment  --------+------------------------------------------------|
    | Error                     | GPU 3 has uncorrectable memory errors and row  |

That row is the section's own failure (a "deployment" test that failed), naming its GPU.

A deployment check that fails on several GPUs prints one Error row joining a message per GPU
("... as root., Persistence mode for GPU 1 ..."), and a test failed on "All" prints a Warning row
per GPU: each GPU's finding quotes the messages that name it, not its neighbours'.
"""

from __future__ import annotations

import re

from .base import Finding, ParseResult, Severity, blank_reason, failed, strip_launcher

TOOL = "dcgm"
ROW = re.compile(r"^\|\s?(?P<name>[^|]*?)\s*\|\s?(?P<value>[^|]*?)\s*\|\s*$")
SECTION = re.compile(r"^[|+]-----\s+(\w+)\s+-+\+")
FOOTER = re.compile(r"^\+-{20,}\+-{20,}\+\s*$")
RESULT = re.compile(r"^(Pass|Fail|Skip|Warn|Not Run)\b(?:\s*-\s*(?P<who>.*))?$", re.IGNORECASE)
PER_GPU = re.compile(r"^GPU\s?(\d+):\s*(\w+)")
GPU_IN_TEXT = re.compile(r"\bGPU\s?(\d+)\b")
DETAIL_ROWS = {"warning", "error", "info"}
METADATA = {"dcgm version", "driver version detected", "gpu device ids detected"}
# dcgmi's result column holds this many characters; longer messages wrap onto continuation rows.
WRAP_WIDTH = 45
# dcgmi joins the messages of one row with "," (3.3) or ", " (3.1) after each message's full stop.
JOINED = re.compile(r"(?<=\.),\s*(?=[A-Z])")
# Display names of the 3.x table and the 4.x plugin names, as the JSON parser keys them.
TEST_KEYS = {"gpu memory": "memory", "pulse test": "pulse_test", "pcie": "pcie"}


def looks_like_table(text: str) -> bool:
    """True when the text carries a dcgmi diag result table."""
    return bool(re.search(r"\|\s*Diagnostic\s*\|\s*Result\s*\|", text))


def parse(text: str) -> ParseResult:
    """Parse a dcgmi diag text table into the same metrics shape the JSON parser gives."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    if not looks_like_table(text):
        return failed(TOOL, "no dcgmi diag result table in the output")
    meta, tests, closed = _read_rows(text)
    if not tests:
        return failed(TOOL, "no test results in the dcgmi table")
    result = ParseResult(
        TOOL, version=meta.get("dcgm version"), driver_version=meta.get("driver version detected")
    )
    summary = {name: _summarise(name, test, result) for name, test in tests.items()}
    failed_tests = sorted(n for n, t in summary.items() if t["status"] == "fail")
    if not closed and not failed_tests:
        return failed(TOOL, "truncated: the dcgmi table has no closing border and shows no failure")
    result.metrics = {
        "layout": "text",
        "complete": closed,
        "level_inferred": _level(summary),
        "gpus": sorted({g for t in tests.values() for g in t["gpus"]}),
        "tests": summary,
        "failed_tests": failed_tests,
    }
    return result


def _read_rows(text: str) -> tuple[dict[str, str], dict[str, dict], bool]:
    """The table's metadata, its tests by key, and whether its closing border came last."""
    meta: dict[str, str] = {}
    tests: dict[str, dict] = {}
    current: dict | None = None
    in_detail = False
    section = ""
    closed = False
    for raw in text.splitlines():
        line = strip_launcher(raw).rstrip()
        if m := SECTION.match(line):
            section, closed = m.group(1), False
            continue
        if FOOTER.match(line):
            closed = bool(tests)
            continue
        m = ROW.match(line)
        if m is None or m.group("name").lower() == "diagnostic":
            continue
        closed = False
        name, value = m.group("name"), m.group("value")
        if name.lower() in METADATA:
            meta[name.lower()] = value
        elif name.lower() == "error" and (current is None or current["section"] != section):
            # An error with no test of its section before it: the section itself failed.
            current = _section_failure(section, value)
            tests[_key(section or "deployment")] = current
            in_detail = True
        elif name.lower() in DETAIL_ROWS:
            in_detail = current is not None
            if current is not None:
                current["detail"].append([value])
        elif not name:
            _continuation(value, current, in_detail)
        elif r := RESULT.match(value):
            current = {"section": section, "status": r.group(1).lower(),
                       "who": r.group("who") or "", "gpus": {}, "detail": []}  # fmt: skip
            tests[TEST_KEYS.get(name.lower(), _key(name))] = current
            in_detail = False
    return meta, tests, closed


def _section_failure(section: str, error: str) -> dict:
    return {"section": section, "status": "fail", "who": "", "gpus": {}, "detail": [[error]]}


def _continuation(value: str, current: dict | None, in_detail: bool) -> None:
    if current is None:
        return
    if (m := PER_GPU.match(value)) and not in_detail:
        current["gpus"][int(m.group(1))] = m.group(2).lower()
    elif in_detail and current["detail"]:
        current["detail"][-1].append(value)


def _detail(chunks: list[str]) -> str:
    """dcgmi wraps messages at a fixed width, mid-word; a shorter chunk lost a trailing space."""
    text = chunks[0] if chunks else ""
    for previous, chunk in zip(chunks, chunks[1:], strict=False):
        text += ("" if len(previous) >= WRAP_WIDTH else " ") + chunk
    return text


def _messages(rows: list[list[str]]) -> list[str]:
    """Each detail row's text, split into the messages dcgmi joined; a message that names no GPU
    stays with the one before it (its explanation, not another GPU's)."""
    messages: list[str] = []
    for chunks in rows:
        for part in JOINED.split(_detail(chunks)):
            if messages and not GPU_IN_TEXT.search(part):
                messages[-1] += ", " + part
            else:
                messages.append(part)
    return messages


def _about(gpu: int | None, messages: list[str], whole: str) -> str:
    """The messages that name the GPU; the whole detail when none does (or for the node)."""
    own = [m for m in messages if gpu is not None and str(gpu) in GPU_IN_TEXT.findall(m)]
    return " ".join(own) if own else whole


def _summarise(name: str, test: dict, out: ParseResult) -> dict:
    """The test's status and failed GPUs; a finding per failed GPU goes to out."""
    status = test["status"]
    messages = _messages(test["detail"])
    detail = " ".join(messages)
    failed_gpus = sorted(g for g, s in test["gpus"].items() if s == "fail")
    if status == "fail" and not failed_gpus:
        failed_gpus = sorted({int(g) for g in GPU_IN_TEXT.findall(test["who"] + " " + detail)})
    if status == "fail":
        why = detail or f"status Fail{' - ' + test['who'] if test['who'] else ''}"
        for gpu in failed_gpus or [None]:
            part = f"GPU {gpu}" if gpu is not None else "node"
            own = _about(gpu, messages, why)
            out.findings.append(
                Finding(
                    part,
                    "gpu" if gpu is not None else "node",
                    f"{part}: DCGM {name} failed: {own}",
                    Severity.CRITICAL,
                    "dcgm_test_failed",
                )
            )
    return {"status": status if status in {"pass", "fail"} else "skip", "failed_gpus": failed_gpus}


def _key(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_").replace("/", "_")


def _level(tests: dict[str, dict]) -> int:
    ran = {name for name, t in tests.items() if t["status"] != "skip"}
    for level, names in (
        (4, {"memtest", "pulse_test", "eud"}),
        (3, {"targeted_stress", "targeted_power", "memory_bandwidth", "diagnostic"}),
        (2, {"pcie", "memory"}),
    ):
        if names & ran:
            return level
    return 1
