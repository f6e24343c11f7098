"""What a BMC declares about one of its actions: parameters, which are required, allowed values.

Two places say it: annotations inline in the action object (`ResetType@Redfish.AllowableValues`)
and the ActionInfo resource it links (`@Redfish.ActionInfo`, with `Parameters`). A write built
from these asks for what the BMC says it takes, instead of finding out by a 400.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import errors

if TYPE_CHECKING:
    from .client import RedfishClient

ANNOTATION = "@Redfish.AllowableValues"


@dataclass(frozen=True)
class Parameter:
    """One declared parameter: required or not, and its allowed values (None: any)."""

    name: str
    required: bool = False
    allowable: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Declared:
    """An action's target and what the BMC declares of its parameters.

    `listed` is True when an ActionInfo enumerated the parameters: only those are taken then.
    Inline annotations alone name some values, not the whole parameter set.
    """

    target: str
    parameters: dict[str, Parameter] = field(default_factory=dict)
    listed: bool = False

    def takes(self, name: str) -> bool:
        """Whether a parameter may be sent: listed, or nothing was listed."""
        return not self.listed or name in self.parameters

    def required(self, name: str) -> bool:
        found = self.parameters.get(name)
        return bool(found and found.required)

    def allowable(self, name: str) -> tuple[str, ...] | None:
        found = self.parameters.get(name)
        return found.allowable if found else None

    def declares(self, name: str) -> bool:
        """Whether the BMC said anything of this parameter (listed it or its values)."""
        return name in self.parameters

    def allows(self, name: str, value: str) -> bool:
        """Whether `value` is among the allowed values (true when none are declared).

        Supermicro writes some allowed Targets as patterns (`CPLD_Backplane_(\\d+)`).
        """
        allowed = self.allowable(name)
        if allowed is None:
            return True
        for entry in allowed:
            if entry == value:
                return True
            if any(c in entry for c in "()\\[]+*"):
                try:
                    if re.fullmatch(entry, value):
                        return True
                except re.error:
                    continue
        return False


def inline(action: dict[str, Any]) -> dict[str, Parameter]:
    """Parameters named by `<Name>@Redfish.AllowableValues` annotations in the action object."""
    found = {}
    for key, values in action.items():
        if key.endswith(ANNOTATION) and isinstance(values, list):
            name = key[: -len(ANNOTATION)]
            found[name] = Parameter(name, False, tuple(str(v) for v in values))
    return found


def from_action_info(body: dict[str, Any]) -> dict[str, Parameter]:
    """Parameters an ActionInfo resource lists."""
    found = {}
    for item in body.get("Parameters") or []:
        if not isinstance(item, dict) or not item.get("Name"):
            continue
        values = item.get("AllowableValues")
        found[str(item["Name"])] = Parameter(
            str(item["Name"]),
            bool(item.get("Required")),
            tuple(str(v) for v in values) if isinstance(values, list) else None,
        )
    return found


def declared(client: RedfishClient, action: dict[str, Any], where: str) -> Declared:
    """What the BMC declares for an action object found at `where` (for error messages).

    An ActionInfo link that leads nowhere (trimmed captures, some firmware) leaves the inline
    annotations as the whole declaration.
    """
    target = action.get("target")
    if not isinstance(target, str) or not target:
        raise errors.ActionNotSupported(
            client.transport.absolute(where), "the action has no target"
        )
    parameters = inline(action)
    listed = False
    info_path = action.get("@Redfish.ActionInfo")
    if isinstance(info_path, str) and info_path:
        try:
            info = client.get(info_path)
        except (errors.ResourceMissing, errors.NotJson, errors.ActionNotSupported):
            info = None
        if info is not None and isinstance(info.get("Parameters"), list):
            listed = True
            for name, parameter in from_action_info(info).items():
                previous = parameters.get(name)
                allowable = parameter.allowable
                if allowable is None and previous is not None:
                    allowable = previous.allowable
                parameters[name] = Parameter(name, parameter.required, allowable)
    return Declared(target=target, parameters=parameters, listed=listed)
