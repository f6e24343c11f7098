"""The acceptance profile schema: the ordered gates a SKU's nodes must pass and their thresholds."""

from __future__ import annotations

from fleet.documents import SEMVER, ParsedDocument, SchemaChecker, load_lined_yaml

from .gates import GATES_BY_NAME

TOP_LEVEL = {
    "sku", "version", "description", "auto_return_to_service", "suspect_action", "gates",
    "rack_gates",
}  # fmt: skip
# How deep a suspect node (reported by a health check or an alert) is re-checked once drained:
# the gates on its installed OS, or a full reprovision (firmware, reimage) before them.
SUSPECT_ACTIONS = ("revalidate", "reprovision")
# The rack-wide gates a rack-scale SKU's profile may ask for beside the fabric verdict, which
# is always judged (acceptance.rack_gate): `dcgmi mndiag` run over the rack's compute trays.
RACK_GATES = ("mndiag",)


def parse_profile(text: str) -> ParsedDocument:
    """Parse and validate an acceptance profile; raise DocumentInvalid listing every error."""
    doc = load_lined_yaml(text)
    check = SchemaChecker(doc)
    root = check.mapping(doc.data, ())
    if root is None:
        check.raise_if_errors()  # a root that is not a mapping is always reported
        raise AssertionError("the checker did not report a missing root")
    check.unknown_keys(root, TOP_LEVEL, ())
    sku = check.string(root, "sku", ())
    version = check.string(root, "version", (), pattern=SEMVER, hint="a version like 1.2.0")
    auto_return = root.get("auto_return_to_service", False)
    if not isinstance(auto_return, bool):
        check.error(("auto_return_to_service",), "must be true or false")
    suspect_action = root.get("suspect_action", "revalidate")
    if suspect_action not in SUSPECT_ACTIONS:
        check.error(("suspect_action",), f"must be one of {', '.join(SUSPECT_ACTIONS)}")
    rack_gates = _rack_gates(check, root)
    gates_out: list[dict] = []
    gates = root.get("gates")
    # A rack-scale SKU's profile may hold rack-wide gates only: its members have their own.
    if rack_gates and gates is None:
        gates = []
    elif not isinstance(gates, list) or not gates:
        check.error(("gates",), "must be a non-empty list of gates")
        gates = []
    seen: set[str] = set()
    for index, item in enumerate(gates):
        path = ("gates", index)
        block = check.mapping(item, path)
        if block is None:
            continue
        check.unknown_keys(block, {"gate", "thresholds"}, path)
        name = check.string(block, "gate", path)
        if name is None:
            continue
        gate = GATES_BY_NAME.get(name)
        if gate is None:
            check.error(
                path + ("gate",),
                f"unknown gate {name!r}; expected one of {', '.join(GATES_BY_NAME)}",
            )
            continue
        if name in seen:
            check.error(path + ("gate",), f"gate {name!r} is listed twice")
        seen.add(name)
        thresholds = check.mapping(block.get("thresholds"), path + ("thresholds",), required=False)
        clean: dict[str, float] = {}
        for key, value in (thresholds or {}).items():
            where = path + ("thresholds", key)
            if key not in gate.thresholds:
                check.error(
                    where,
                    f"unknown threshold {key!r} for {name}; expected one of "
                    f"{', '.join(gate.thresholds)}",
                )
            elif isinstance(value, bool) or not isinstance(value, int | float):
                check.error(where, "must be a number")
            else:
                clean[key] = value
        gates_out.append({"gate": name, "thresholds": clean})
    check.raise_if_errors()
    spec = {
        "sku": sku,
        "version": version,
        "description": root.get("description", ""),
        "auto_return_to_service": bool(auto_return),
        "gates": gates_out,
    }
    if "suspect_action" in root:
        spec["suspect_action"] = suspect_action
    if rack_gates:
        spec["rack_gates"] = rack_gates
    return ParsedDocument(sku=sku, version=version, spec=spec)


def _rack_gates(check: SchemaChecker, root: dict) -> list[str]:
    """`rack_gates:`, a list of RACK_GATES names, each once."""
    value = root.get("rack_gates")
    if value is None:
        return []
    if not isinstance(value, list) or not value:
        check.error(("rack_gates",), f"must be a non-empty list of {', '.join(RACK_GATES)}")
        return []
    out: list[str] = []
    for index, name in enumerate(value):
        if name not in RACK_GATES:
            check.error(("rack_gates", index),
                        f"unknown rack gate {name!r}; expected one of {', '.join(RACK_GATES)}")  # fmt: skip
        elif name in out:
            check.error(("rack_gates", index), f"rack gate {name!r} is listed twice")
        else:
            out.append(name)
    return out


def rack_gates_of(spec: dict | None) -> tuple[str, ...]:
    """The rack-wide gates a parsed profile asks for (none for a node SKU's profile)."""
    return tuple((spec or {}).get("rack_gates") or ())
