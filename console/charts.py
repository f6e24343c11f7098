"""Tiny inline SVG line charts (no JavaScript library): the soak telemetry of the node panel."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

WIDTH, HEIGHT = 360, 110
PAD_L, PAD_R, PAD_T, PAD_B = 38, 8, 16, 18


@dataclass(frozen=True)
class Series:
    label: str
    color: str  # a colour name from the choices maps; CSS gives it its value
    points: list[tuple[float, float]]


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 10 else f"{v:.2g}"


def line_chart(title: str, series: list[Series], limit: float | None = None) -> SafeString:
    """An SVG chart of the series over hours, with an optional dashed limit line."""
    xs = [x for s in series for x, _ in s.points] or [0.0, 1.0]
    ys = [y for s in series for _, y in s.points] + ([limit] if limit is not None else [])
    ys = ys or [0.0, 1.0]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    lo, hi = min(ys), max(ys)
    pad = (hi - lo) * 0.1 or 1
    y0, y1 = lo - pad, hi + pad

    def sx(x: float) -> float:
        return PAD_L + (x - x0) / (x1 - x0) * (WIDTH - PAD_L - PAD_R)

    def sy(y: float) -> float:
        return HEIGHT - PAD_B - (y - y0) / (y1 - y0) * (HEIGHT - PAD_T - PAD_B)

    lines = format_html_join(
        "",
        '<polyline class="ln c-{}" points="{}"><title>{}</title></polyline>',
        (
            (s.color, " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s.points), s.label)
            for s in series
        ),
    )
    legend = format_html_join(
        "", '<tspan class="lg c-{}">■ {} </tspan>', ((s.color, s.label) for s in series)
    )
    limit_line = (
        format_html(
            '<line class="limit" x1="{}" x2="{}" y1="{}" y2="{}"/>'
            '<text class="ax" x="{}" y="{}">limit {}</text>',
            PAD_L,
            WIDTH - PAD_R,
            f"{sy(limit):.1f}",
            f"{sy(limit):.1f}",
            WIDTH - PAD_R - 50,
            f"{sy(limit) - 3:.1f}",
            _fmt(limit),
        )
        if limit is not None
        else ""
    )
    return format_html(
        '<svg class="chart" viewBox="0 0 {w} {h}" role="img" aria-label="{title}">'
        '<text class="tt" x="{pl}" y="11">{title} {legend}</text>'
        '<line class="axis" x1="{pl}" x2="{pl}" y1="{pt}" y2="{yb}"/>'
        '<line class="axis" x1="{pl}" x2="{xr}" y1="{yb}" y2="{yb}"/>'
        '<text class="ax" x="{tx}" y="{ty_hi}" text-anchor="end">{hi}</text>'
        '<text class="ax" x="{tx}" y="{ty_lo}" text-anchor="end">{lo}</text>'
        '<text class="ax" x="{pl}" y="{h}">{x0} h</text>'
        '<text class="ax" x="{xr}" y="{h}" text-anchor="end">{x1} h</text>'
        "{limit}{lines}</svg>",
        w=WIDTH,
        h=HEIGHT - 2,
        title=title,
        legend=legend,
        pl=PAD_L,
        pt=PAD_T,
        yb=HEIGHT - PAD_B,
        xr=WIDTH - PAD_R,
        tx=PAD_L - 4,
        ty_hi=f"{sy(hi) + 4:.1f}",
        ty_lo=f"{sy(lo) + 4:.1f}",
        hi=_fmt(hi),
        lo=_fmt(lo),
        x0=_fmt(x0),
        x1=_fmt(x1),
        limit=limit_line,
        lines=lines,
    )
