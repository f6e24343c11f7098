"""What `dcgmi mndiag --json` prints, in the shape DCGM's own source gives it (NVIDIA/DCGM at
72fa3fe, "DCGM 4.6.0", Apache-2.0). No captured output of the tool is public; this module is
the source's shape, written out:

- dcgmi/MnDiag.cpp builds the document: "DCGM Diagnostic": "DCGM Multi-Node Diagnostic";
  "metadata" {num_hosts, num_entities}; "hosts" (absent when the run failed) with each host's
  host_id, hostname, dcgm_version, driver_version, num_entities and entities; "test_categories"
  [{"category": "Multi-Node Tests", "tests": [{name, status, test_summary, results, and
  mpi_error when the test failed with no GPU error}]}]; "global_errors"; "runtime_error" when
  dcgmi could not complete the run (then printed with one more newline, std::endl).
- modules/mndiag/MnDiagMpiMnubergemmRunner.cpp fills it from mnubergemm's "MNUB [E] G: g host
  L: l T:N message" lines: hosts sorted by name (host_id is that order), one GPU per local rank
  (entity_id l, no serial or device id), an error per failing GPU (error_id 1 DCGM_FR_UNKNOWN,
  category 15 HARDWARE_OTHER, severity 4 TRIAGE, its messages joined by "; "); the results'
  host order follows an unordered_map, so it is not sorted.
- Json::Value::toStyledString() of jsoncpp 1.9.6 (the version DCGM builds with) writes it:
  keys sorted, a tab per level, `"key" : ` and a nested object or array opening on the next
  line, every non-empty array one item per line (comment style "All"), non-ASCII as \\uXXXX.

Free of Django and of the rest of the lab: facts in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NAME = "DCGM Multi-Node Diagnostic"
TEST = "MNUBERGEMM"
CATEGORY = "Multi-Node Tests"
GPU_GROUP_ID = 1  # DCGM_FE_GPU
# What MnDiagMpiMnubergemmRunner files with each failing GPU's messages.
ERROR_ID, ERROR_CATEGORY, ERROR_SEVERITY = 1, 15, 4
# DCGM's own test of that runner feeds it these lines of a failing mnubergemm.
CUDA_ERROR = "CUDA Error : cudaStreamQuery returned an illegal memory access was encountered"
CUBLAS_ERROR = "cuBLAS Error : init failed"


@dataclass(frozen=True)
class MnHost:
    """One host of the run: its name (gethostname), versions, GPUs (local ranks), and the
    messages mnubergemm printed for a failing GPU, by its local rank."""

    hostname: str
    gpus: int = 4
    dcgm_version: str = "4.6.0"
    driver_version: str = "580.95.05"
    errors: Mapping[int, Sequence[str]] = field(default_factory=dict)


def mndiag_json(hosts: Sequence[MnHost], result_order: Sequence[int] | None = None) -> str:
    """The --json document of a run that completed, its hosts sorted by name as DCGM does;
    `result_order` (indexes into the sorted hosts) orders the results, as DCGM's map does."""
    ordered = sorted(hosts, key=lambda h: h.hostname)
    order = list(result_order) if result_order is not None else list(range(len(ordered)))
    failed = any(h.errors for h in ordered)
    results = []
    for index in order:
        host = ordered[index]
        for gpu in range(host.gpus):
            entry: dict[str, Any] = {
                "entity_group": "GPU",
                "entity_group_id": GPU_GROUP_ID,
                "entity_id": gpu,
                "host_id": index,
                "status": "Fail" if gpu in host.errors else "Pass",
            }
            if gpu in host.errors:
                entry["warnings"] = [
                    {
                        "error_category": ERROR_CATEGORY,
                        "error_id": ERROR_ID,
                        "error_severity": ERROR_SEVERITY,
                        "warning": "; ".join(host.errors[gpu]),
                    }
                ]
            results.append(entry)
    status = "Fail" if failed else "Pass"
    document = {
        "DCGM Diagnostic": NAME,
        "metadata": {"num_entities": len(results), "num_hosts": len(ordered)},
        "hosts": [_host(i, h) for i, h in enumerate(ordered)],
        "test_categories": [
            {
                "category": CATEGORY,
                "tests": [
                    {
                        "name": TEST,
                        "results": results,
                        "status": status,
                        "test_summary": {"status": status},
                    }
                ],
            }
        ],
    }
    return styled(document) + "\n"


def mndiag_runtime_error(message: str) -> str:
    """The --json document of a run dcgmi could not complete (an empty response): its
    message as MnDiag::RunStartMnDiag words it, printed with std::endl after it."""
    document = {
        "DCGM Diagnostic": NAME,
        "metadata": {"num_entities": 0, "num_hosts": 0},
        "runtime_error": message,
    }
    return styled(document) + "\n\n"


def unable_to_complete(return_text: str, code: int, head: str = "localhost") -> str:
    """RunStartMnDiag's message for a run that failed with dcgmReturn_t `code`."""
    return (
        f"Error: Unable to complete multi-node diagnostic on host {head}. "
        f"Return: ({return_text}) {code}\n"
    )


def _host(index: int, host: MnHost) -> dict[str, Any]:
    return {
        "dcgm_version": host.dcgm_version,
        "driver_version": host.driver_version,
        "entities": [
            {"entity_group": "GPU", "entity_group_id": GPU_GROUP_ID, "entity_id": gpu}
            for gpu in range(host.gpus)
        ],
        "host_id": index,
        "hostname": host.hostname,
        "num_entities": host.gpus,
    }


# -- jsoncpp's BuiltStyledStreamWriter, as toStyledString() sets it up ---------------------------

INDENT = "\t"
RIGHT_MARGIN = 74


def styled(value: Any) -> str:
    """`value` as jsoncpp 1.9.6's Value::toStyledString() writes it, without its last newline."""
    out: list[str] = []
    _write(value, out, "", indented=True)
    return "".join(out)


def _write(value: Any, out: list[str], indent: str, indented: bool) -> None:
    """Write `value`; `indented`: the writer's indented_ flag (no newline before a bracket)."""
    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        out.append("{" if indented else f"\n{indent}{{")
        inner = indent + INDENT
        for position, key in enumerate(sorted(value)):
            out.append(f"\n{inner}{_quoted(key)} : ")
            _write(value[key], out, inner, indented=False)
            if position < len(value) - 1:
                out.append(",")
        out.append(f"\n{indent}}}")
    elif isinstance(value, list):
        if not value:
            out.append("[]")
            return
        out.append("[" if indented else f"\n{indent}[")
        inner = indent + INDENT
        for position, item in enumerate(value):
            out.append(f"\n{inner}")
            _write(item, out, inner, indented=True)
            if position < len(value) - 1:
                out.append(",")
        out.append(f"\n{indent}]")
    else:
        out.append(_scalar(value))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return _quoted(str(value))


ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _quoted(text: str) -> str:
    out = []
    for char in text:
        code = ord(char)
        if char in ESCAPES:
            out.append(ESCAPES[char])
        elif code < 0x20 or 0x80 <= code < 0x10000:
            out.append(f"\\u{code:04x}")
        elif code >= 0x10000:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
