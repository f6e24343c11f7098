"""The Redfish client: every out-of-band phase reaches a BMC through RedfishClient."""

from .client import RedfishClient
from .errors import RedfishError
from .models import (
    BootOverride,
    FirmwareItem,
    PowerAction,
    PowerState,
    Staged,
    SystemInfo,
    TaskState,
    TaskStatus,
)

__all__ = [
    "BootOverride",
    "FirmwareItem",
    "PowerAction",
    "PowerState",
    "RedfishClient",
    "RedfishError",
    "Staged",
    "SystemInfo",
    "TaskState",
    "TaskStatus",
]
