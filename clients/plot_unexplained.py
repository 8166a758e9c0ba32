"""Special points a boundary job saw but could not explain by a traced line, marked on its phase diagram.

A scan of the box saw a transition there and no traced line passes through it: the figure shows the point, in the
colour of its kind of line, so that a missing line is never invisible. Each marker has the ``gid``
``unexplained:<kind>``.
"""

from __future__ import annotations

from typing import Any

from clients.plot_labels import transition_name
from clients.plot_style import transition_style
from clients.result import Result

#: An open diamond, larger than a line is wide: it stands out from the lines and from the critical points' stars.
MARKER = {"marker": "D", "markersize": 8, "markerfacecolor": "none", "markeredgewidth": 1.6, "linestyle": "none"}


def draw_unexplained(ax: Any, result: Result) -> None:
    """Mark each of ``result.unexplained`` at its point (p2 across, p1 up, like the phase diagram), one legend
    entry per kind: "<kind>, seen but not traced"."""
    by_name: dict[str, list[tuple[float, float]]] = {}
    for u in result.unexplained:
        if None not in u.point:
            by_name.setdefault(transition_name(str(u.label), u.type), []).append(u.point)
    for name, points in by_name.items():
        color = transition_style(name).get("color", "k")
        ax.plot([p[1] for p in points], [p[0] for p in points], markeredgecolor=color, gid=f"unexplained:{name}",
                label=f"{name}, seen but not traced", **MARKER)
