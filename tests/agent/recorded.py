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
