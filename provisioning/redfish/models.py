"""Plain data the Redfish client returns: readers give these, writers give a Staged receipt."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any


class PowerState(enum.StrEnum):
    """A system's power as read back. UNKNOWN when it cannot be read: never assume Off."""

    ON = "On"
    OFF = "Off"
    POWERING_ON = "PoweringOn"
    POWERING_OFF = "PoweringOff"
    UNKNOWN = "Unknown"

    @classmethod
    def parse(cls, value: Any) -> PowerState:
        """Map a Redfish PowerState value; anything unexpected is UNKNOWN."""
        for member in cls:
            if isinstance(value, str) and value.lower() == member.value.lower():
                return member
        return cls.UNKNOWN


class PowerAction(enum.StrEnum):
    """What a caller wants done; the client picks a ResetType the BMC allows for it."""

    ON = "on"
    OFF = "off"
    GRACEFUL_OFF = "graceful_off"
    RESTART = "restart"
    GRACEFUL_RESTART = "graceful_restart"


@dataclass(frozen=True)
class BootOverride:
    """The boot source override: target (Pxe, Hdd, None...), enabled (Once, Continuous,
    Disabled) and mode (UEFI, Legacy, or "" when the BMC does not say)."""

    target: str
    enabled: str
    mode: str = ""


@dataclass(frozen=True)
class SystemInfo:
    """Identity and state of the computer system a BMC manages."""

    id: str
    odata_id: str
    manufacturer: str
    model: str
    serial: str
    uuid: str
    power_state: PowerState
    boot: BootOverride
    bios_version: str


@dataclass(frozen=True)
class FirmwareItem:
    """One FirmwareInventory member, placed: which component kind and part it is, and whether
    it is the copy that runs.

    `kind` is a ComponentKind (None when nothing updates it out of band or it is unknown);
    `part` the sub-component (naming.PARTS: "hmc", "erot", "gpu"... or "unknown"); `model` the
    related device's model where Redfish links one; `running` False for a backup, staging,
    pending, golden or previous copy.
    """

    id: str
    odata_id: str
    name: str
    version: str
    updateable: bool
    kind: str | None = None
    part: str = "unknown"
    model: str = ""
    running: bool = True
    state: str = ""
    related: tuple[str, ...] = ()  # the RelatedItem paths the BMC gives


@dataclass(frozen=True)
class Staged:
    """Receipt of a write the BMC accepted. Accepted is not done: read back to verify.

    `task_monitor` is set when the BMC answered 202 with a Location to poll.
    """

    action: str
    url: str
    status: int
    task_monitor: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


class TaskState(enum.StrEnum):
    """Coarse state of a BMC task, from one look at its monitor."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


@dataclass(frozen=True)
class TaskStatus:
    """One look at a task monitor: the coarse state, the BMC's own words, and percent if given."""

    state: TaskState
    raw_state: str
    percent: int | None
    messages: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        return self.state is not TaskState.RUNNING


def as_dict(value: Any) -> Any:
    """JSON-ready form of the dataclasses above (enums become their values)."""
    if isinstance(value, list | tuple):
        return [as_dict(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {k: as_dict(v) for k, v in asdict(value).items()}
    if isinstance(value, enum.Enum):
        return value.value
    return value
