"""What the agent simulation keeps about a lab node beyond its BMC's view: disks and the OS."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from .node import LabNode


@dataclass
class InbandState:
    """Disk contents (a token per drive, changed by a real erase) and the installed image."""

    os_image_sha256: str = ""
    install_record: dict = field(default_factory=dict)  # what os_install wrote beside the image
    drive_data: dict[str, str] = field(default_factory=dict)
    erase_count: int = 0
    flashes: dict[str, int] = field(default_factory=dict)
    gpu_resets: dict[int, int] = field(default_factory=dict)  # GPU index -> resets this boot

    @classmethod
    def fresh(cls, node: LabNode) -> InbandState:
        # From the factory: every drive holds something (the vendor's test image, say).
        return cls(
            drive_data={d["serial"]: f"factory:{d['serial']}" for d in node.drives},
        )

    def digest(self, serial: str) -> str:
        return hashlib.sha256(self.drive_data.get(serial, "").encode()).hexdigest()
