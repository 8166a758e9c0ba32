"""Legends of SaddleLab's figures: branches named in words, once per meaning, a line style's meaning said once
per axes, and the legend itself inside the axes where it covers least or under their caption, in as many columns as
the laid-out axes hold, never beside them (a figure a plot made for itself grows to hold it)."""

from __future__ import annotations

from typing import Any

from clients.plot_marks import figure_renderer

#: gid of a figure a plot function made for itself (a legend below its axes may make it taller).
OWN_FIGURE = "saddlelab-figure"


def branch_title(name: str) -> str:
    """A branch as a legend names it: words, not an identifier (``weakly_specialized_unstable`` → "weakly
    specialized"; the dashed line says it is unstable), a readout-law qualifier kept (``specialized[|v|>=0.5]`` →
    "specialized, |v| ≥ 0.5")."""
    base, _, qualifier = name.partition("[")
    if base.endswith("_unstable") and base != "unstable":
        base = base[: -len("_unstable")]
    words = base.replace("_", " ").strip()
    if qualifier:
        words += ", " + qualifier.rstrip("]").replace(">=", " ≥ ").replace("<=", " ≤ ")
    return words


def style_entry(ax: Any, label: str, **style: Any) -> None:
    """A legend entry for a line style (what dashed or thin means), once per axes."""
    if label not in ax.get_legend_handles_labels()[1]:
        ax.plot([], [], color="0.3", label=label, gid=LEGEND_ENTRY, **style)


#: gid of a line drawn only for its legend entry.
LEGEND_ENTRY = "legend-entry"
#: Legend entries that say what a line style means.
UNSTABLE, METASTABLE = "unstable (dashed)", "metastable (thin)"


#: More legend entries than this in a figure of scattered points go below the axes.
LEGEND_INSIDE = 5
#: Points between the lowest text under the axes (x label, caption) and a legend below them.
LEGEND_GAP = 4.0


def depth_below(ax: Any, renderer: Any) -> float:
    """Points from the bottom of the axes to the bottom of what is written under it (tick labels, x label,
    caption): offsets in points, which no layout changes."""
    legend = ax.get_legend()
    if legend is not None:
        legend.remove()
    bottom = ax.get_tightbbox(renderer).y0
    return (ax.get_window_extent(renderer).y0 - bottom) * 72.0 / ax.figure.dpi


def final_width(ax: Any, renderer: Any) -> float:
    """The width (pixels) the axes will have once laid out: their columns' share of the figure less what is written
    beside them (tick labels, y label: fixed in points) and the layout's margins (0.3 in); a layout engine may not
    have widened them yet. Without a layout engine, their present width."""
    frame = ax.get_window_extent(renderer)
    spec = ax.get_subplotspec() if hasattr(ax, "get_subplotspec") else None
    if spec is None or ax.figure.get_layout_engine() is None:
        return float(frame.width)
    tight = ax.get_tightbbox(renderer)
    beside = max(0.0, frame.x0 - tight.x0) + max(0.0, tight.x1 - frame.x1) + 0.3 * ax.figure.dpi
    share = len(spec.colspan) / spec.get_gridspec().ncols
    return max(float(frame.width), share * ax.figure.bbox.width - beside)


def place_legend(ax: Any, fontsize: str | float = "small", below: bool = False) -> None:
    """A compact legend inside the axes where it covers least, or (``below``) under the axes' x label and caption,
    centred, in as many columns as the axes' width holds: the axes keep their width."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if not below:
        ax.legend(loc="best", fontsize=fontsize, framealpha=0.85)
        return
    from matplotlib.transforms import ScaledTranslation

    renderer = figure_renderer(ax)
    down = ScaledTranslation(0.0, -(depth_below(ax, renderer) + LEGEND_GAP) / 72.0, ax.figure.dpi_scale_trans)
    width = final_width(ax, renderer)
    for ncols in range(min(len(handles), 4), 0, -1):
        legend = ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                           bbox_transform=ax.transAxes + down, ncols=ncols, fontsize=fontsize, frameon=False,
                           borderaxespad=0.0, columnspacing=1.2, handlelength=1.8)
        if legend.get_window_extent(renderer).width <= width or ncols == 1:
            break
    fig = ax.figure
    if fig.get_gid() == OWN_FIGURE:
        # a figure of its own grows by the legend's height (once), so that the axes keep theirs
        fig.set_figheight(fig.get_figheight() + (legend.get_window_extent(renderer).height + LEGEND_GAP) / fig.dpi)
        fig.set_gid(f"{OWN_FIGURE}:grown")
