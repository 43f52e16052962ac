"""An SVG line chart, drawn on the server: the page needs no script and no download, and what
it shows is in the HTML a test (or a person with curl) can read.

Each line is one ``<polyline data-line="...">``; a line flagged for attention is drawn thick and
red, the others in a muted palette, so a stalled partition stands out at a glance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from tidemark.stream_overview import Line

WIDTH, HEIGHT, MARGIN_LEFT, MARGIN_RIGHT, MARGIN_Y = 960, 280, 170, 20, 24
PALETTE = ("#4e79a7", "#59a14f", "#9c755f", "#76b7b2", "#b07aa1", "#edc948", "#ff9da7", "#bab0ac")
ATTENTION_COLOUR = "#d62728"
GLOBAL_COLOUR = "#111111"


def line_chart(
    title: str,
    lines: Sequence[Line],
    attention: set[str],
    value_text: Callable[[int], str],
    time_text: Callable[[int], str],
    emphasised: str | None = None,
) -> str:
    """``lines`` as one SVG chart; labels in ``attention`` drawn red and thick, ``emphasised``
    (the global watermark) black and dashed. Values and times are integers (ms, offsets)."""
    points = [point for line in lines for point in line.points]
    if not points:
        return f'<figure class="chart"><figcaption>{escape(title)}</figcaption><p class="empty">No points yet.</p></figure>'
    t0, t1 = min(t for t, _ in points), max(t for t, _ in points)
    v0, v1 = min(v for _, v in points), max(v for _, v in points)
    span_t, span_v = max(t1 - t0, 1), max(v1 - v0, 1)
    inner_w, inner_h = WIDTH - MARGIN_LEFT - MARGIN_RIGHT, HEIGHT - 2 * MARGIN_Y

    def xy(t: int, v: int) -> str:
        return f"{MARGIN_LEFT + (t - t0) * inner_w / span_t:.1f},{HEIGHT - MARGIN_Y - (v - v0) * inner_h / span_v:.1f}"

    drawn = []
    legend = []
    for index, line in enumerate(lines):
        if line.label == emphasised:
            # Thin and dashed: G runs along the partition holding it, whose line must show through.
            colour, style = GLOBAL_COLOUR, 'stroke-width="2" stroke-dasharray="8 5"'
        elif line.label in attention:
            colour, style = ATTENTION_COLOUR, 'stroke-width="5"'
        else:
            colour, style = PALETTE[index % len(PALETTE)], 'stroke-width="1.5"'
        classes = "attention" if line.label in attention else ""
        coordinates = " ".join(xy(t, v) for t, v in line.points)
        drawn.append(
            f'<polyline data-line="{escape(line.label)}" class="{classes}" fill="none" stroke="{colour}" {style} points="{coordinates}"/>'
        )
        legend.append(f'<span class="key {classes}"><i style="background:{colour}"></i>{escape(line.label)}</span>')
    axes = (
        f'<text x="{MARGIN_LEFT - 6}" y="{MARGIN_Y + 4}" text-anchor="end">{escape(value_text(v1))}</text>'
        f'<text x="{MARGIN_LEFT - 6}" y="{HEIGHT - MARGIN_Y}" text-anchor="end">{escape(value_text(v0))}</text>'
        f'<text x="{MARGIN_LEFT}" y="{HEIGHT - 6}">{escape(time_text(t0))}</text>'
        f'<text x="{WIDTH - MARGIN_RIGHT}" y="{HEIGHT - 6}" text-anchor="end">{escape(time_text(t1))}</text>'
        f'<line x1="{MARGIN_LEFT}" y1="{MARGIN_Y}" x2="{MARGIN_LEFT}" y2="{HEIGHT - MARGIN_Y}" stroke="#999"/>'
        f'<line x1="{MARGIN_LEFT}" y1="{HEIGHT - MARGIN_Y}" x2="{WIDTH - MARGIN_RIGHT}" y2="{HEIGHT - MARGIN_Y}" stroke="#999"/>'
    )
    return (
        f'<figure class="chart"><figcaption>{escape(title)}</figcaption>'
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img" aria-label="{escape(title)}">{axes}{"".join(drawn)}</svg>'
        f'<div class="legend">{"".join(legend)}</div></figure>'
    )
