"""Replays tool output recorded on real machines through SystemHardware's command seams."""

from __future__ import annotations

from pathlib import Path

from agent.tools import NOT_FOUND, Completed

SAMPLES = Path(__file__).parent / "samples"


def sample(name: str) -> str:
    """The text of one recorded output (see samples/README.md for where each came from)."""
    return (SAMPLES / name).read_text()


class RecordedTools:
    """Answers each command with the recorded output registered for its leading words.

    A command nobody registered answers as a missing tool does (exit 127), which is what a
    node without that tool sees.
    """

    def __init__(self, answers: dict[tuple[str, ...], Completed]) -> None:
        self.answers = answers
        self.calls: list[list[str]] = []

    async def capture(self, cmd: list[str]) -> Completed:
        self.calls.append(cmd)
        for length in range(len(cmd), 0, -1):
            answer = self.answers.get(tuple(cmd[:length]))
            if answer is not None:
                return answer
        return Completed(NOT_FOUND, "", f"{cmd[0]}: command not found")


def two_maker_node() -> dict[tuple[str, ...], Completed]:
    """A node's identity, ports and three NVMe drives (a WDC SN730 twice, a Solidigm D5-P5336)."""
    return {
        ("dmidecode", "-t", "1"): Completed(0, sample("dmidecode-t1-asrock-e3c246d4i.txt")),
        ("ip", "-d", "-j", "link"): Completed(0, sample("ip-d-j-link-this-machine.json")),
        ("nvme", "list"): Completed(0, sample("nvme-list-micron-samsung.nvmecli1.json")),
        ("nvme", "id-ctrl", "/dev/nvme0"): Completed(
            0, sample("nvme-id-ctrl-wdc-sn730.nvmecli1.json")
        ),
        ("nvme", "id-ctrl", "/dev/nvme1"): Completed(
            0, sample("nvme-id-ctrl-solidigm-d5p5336.nvmecli2.json")
        ),
        ("nvme", "id-ctrl", "/dev/nvme2"): Completed(
            0, sample("nvme-id-ctrl-wdc-sn730-fna0.nvmecli1.json")
        ),
    }
