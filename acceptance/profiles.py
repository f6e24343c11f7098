"""The acceptance profile schema: the ordered gates a SKU's nodes must pass and their thresholds."""

from __future__ import annotations

from fleet.documents import SEMVER, ParsedDocument, SchemaChecker, load_lined_yaml

from .gates import GATES_BY_NAME

TOP_LEVEL = {"sku", "version", "description", "auto_return_to_service", "suspect_action", "gates"}
# How deep a suspect node (reported by a health check or an alert) is re-checked once drained:
# the gates on its installed OS, or a full reprovision (firmware, reimage) before them.
SUSPECT_ACTIONS = ("revalidate", "reprovision")


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
    gates_out: list[dict] = []
    gates = root.get("gates")
    if not isinstance(gates, list) or not gates:
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
    return ParsedDocument(sku=sku, version=version, spec=spec)
