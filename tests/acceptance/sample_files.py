"""Hand-made tool outputs under samples/, read by name."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).parent / "samples"


def read(name: str) -> str:
    """The text of samples/<name>."""
    return (SAMPLES / name).read_text()
