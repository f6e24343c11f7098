"""The state colours, measured from the one place they are defined: the names in fleet.choices,
the values in app.css's :root. States that must never be confused differ in lightness (CIE L*),
so they stay apart for a colour-blind person and on a washed-out screen; text on every colour
is readable; and every state has an icon of its own besides."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from acceptance.choices import VERDICT_COLORS
from fleet.choices import NODE_STATE_COLORS, NODE_STATE_ICONS, NodeState
from provisioning.choices import PHASE_STATUS_COLORS, RUN_STATUS_COLORS

APP_CSS = Path(__file__).resolve().parents[2] / "static" / "greenlight" / "app.css"
S = NodeState
# The states a tech must tell apart at a glance: never two of them alike in lightness.
MUST_DIFFER = (S.QUARANTINED, S.FAILED, S.IN_SERVICE, S.VALIDATING)
MIN_LIGHTNESS_GAP = 15.0  # CIE L* units (0 black, 100 white)
MIN_TEXT_CONTRAST = 4.5  # WCAG AA for normal text


def css_palette(css: str) -> dict[str, tuple[str, str]]:
    """Colour name -> (fill, text on it) as hex, from :root and the .c-<name> rules."""
    root = re.search(r":root\s*\{(.*?)\}", css, re.S)
    if root is None:
        raise ValueError("app.css has no :root block")
    values = dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-fA-F]{6})\b", root.group(1)))

    def resolve(value: str) -> str:
        ref = re.fullmatch(r"var\(--([a-z-]+)\)", value.strip())
        if ref:
            return values[ref.group(1)]
        if value.strip() == "#fff":
            return "#ffffff"
        return value.strip()

    palette = {}
    for name, body in re.findall(r"\.c-([a-z]+)\s*\{([^}]*)\}", css):
        props = dict(re.findall(r"--(c|on-c):\s*([^;]+);", body))
        if "c" not in props:
            continue  # a rule that styles a colour's elements (a pattern), not the colour
        palette[name] = (resolve(props["c"]), resolve(props.get("on-c", "#fff")))
    return palette


def luminance(hex_colour: str) -> float:
    """WCAG relative luminance of an sRGB colour."""
    channels = [int(hex_colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def lightness(hex_colour: str) -> float:
    """CIE L* of an sRGB colour: lightness as people see it, whatever their colour vision."""
    y = luminance(hex_colour)
    return 116 * y ** (1 / 3) - 16 if y > 216 / 24389 else 24389 / 27 * y


def contrast(a: str, b: str) -> float:
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


@pytest.fixture(scope="module")
def palette() -> dict[str, tuple[str, str]]:
    return css_palette(APP_CSS.read_text())


def test_the_measures_are_right():
    assert lightness("#000000") == pytest.approx(0) and lightness("#ffffff") == pytest.approx(100)
    assert contrast("#000000", "#ffffff") == pytest.approx(21)
    assert lightness("#777777") == pytest.approx(50.0, abs=0.5)


def test_a_css_without_a_root_block_is_refused():
    with pytest.raises(ValueError, match=":root"):
        css_palette(".c-red { --c: #f00; }")


def test_every_colour_a_choice_names_is_defined_in_the_css(palette):
    for colours in (NODE_STATE_COLORS, RUN_STATUS_COLORS, PHASE_STATUS_COLORS, VERDICT_COLORS):
        assert set(colours.values()) <= set(palette), set(colours.values()) - set(palette)


def test_states_a_tech_must_tell_apart_differ_in_lightness(palette):
    for a, b in itertools.combinations(MUST_DIFFER, 2):
        la = lightness(palette[NODE_STATE_COLORS[a]][0])
        lb = lightness(palette[NODE_STATE_COLORS[b]][0])
        assert abs(la - lb) >= MIN_LIGHTNESS_GAP, (
            f"{a.label} (L*={la:.1f}) and {b.label} (L*={lb:.1f})"
        )


def test_text_on_every_colour_is_readable(palette):
    for name, (fill, ink) in palette.items():
        assert contrast(fill, ink) >= MIN_TEXT_CONTRAST, f"{name}: {fill} with {ink}"


def test_every_state_has_a_colour_and_an_icon_of_its_own():
    assert set(NODE_STATE_COLORS) == set(NodeState) == set(NODE_STATE_ICONS)
    assert len(set(NODE_STATE_ICONS.values())) == len(NodeState)


def test_the_old_palette_would_have_failed():
    """Validating (indigo #6d28d9) and quarantined (purple #a21caf) were 3 L* apart."""
    assert abs(lightness("#6d28d9") - lightness("#a21caf")) < MIN_LIGHTNESS_GAP
