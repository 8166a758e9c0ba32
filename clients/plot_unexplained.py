"""Special points a boundary job saw but could not explain by a traced line, marked on its phase diagram.

A scan of the box saw a transition there and no traced line passes through it: the figure shows the point, so
that a missing line is never invisible. Each marker has the ``gid`` ``unexplained``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: An open red diamond: it stands out from the lines' styles and from the critical points' black stars.
STYLE = {"marker": "D", "markersize": 7, "markerfacecolor": "none", "markeredgecolor": "crimson",
         "markeredgewidth": 1.4, "linestyle": "none"}


def draw_unexplained(ax: Any, result: Mapping[str, Any]) -> None:
    """Mark each of ``result["unexplained"]`` at its point (p2 across, p1 up, like the phase diagram)."""
    points = [u["point"] for u in result.get("unexplained") or [] if None not in u["point"][:2]]
    if points:
        ax.plot([p[1] for p in points], [p[0] for p in points], label="seen, no line traced", gid="unexplained",
                **STYLE)
