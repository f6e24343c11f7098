"""pasted_lines skips textwrap.dedent where no margin is common to every line: the lines it gives
are the ones dedent would have given, for every sample the parsers are tested on and for the
shapes a paste takes (indented as a whole, quoted, whitespace-only and trailing lines)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from acceptance.parsers.base import pasted_lines, strip_launcher, unquote

# The text samples (the TPM event logs are binary).
SAMPLES = sorted(
    p for p in (Path(__file__).parent / "samples").rglob("*") if p.is_file() and p.suffix != ".bin"
)


def dedented(text: str) -> list[str]:
    """The lines as pasted_lines gave them when it dedented every text."""
    unquoted = textwrap.dedent("\n".join(unquote(line) for line in text.splitlines()))
    return [strip_launcher(line) for line in unquoted.splitlines()]


SHAPES = {
    "unindented": "# nccl-tests version 2.13.8\n  8  2  float  sum  -1  1.0\n",
    "indented as a whole": "    # Avg bus bandwidth    : 1.2\n    8 2 float\n\n      deeper\n",
    "tabs": "\t a\n\t b\n",
    "mixed margins": "  a\n\tb\n",
    "whitespace-only lines": "a\n   \n\t\nb\n  \t ",
    "trailing empty lines": "a\n\n\n",
    "quoted": "> > 8 2 float\n>     indented\n> \n",
    "quoted and indented": ">     a\n>     b\n",
    "only whitespace": "   \n\t\n",
    "empty": "",
    "other separators": "a\x0bb\x0c  c\r\n  d\u2028e",
    "ideographic space": "\u3000a\n b\n",
}


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_sample_gives_the_lines_dedent_gave(sample):
    text = sample.read_text()
    assert pasted_lines(text) == dedented(text)


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_every_shape_of_paste_gives_the_lines_dedent_gave(text):
    assert pasted_lines(text) == dedented(text)
