"""Transitions on a figure: a thin vertical line at each located special point, its value written just above the
axes (clear of the data), the labels of close values stacked in rows so that none covers another, and each
special point marked where it lies on its curve.

Every artist drawn here has a ``gid`` (``transition:<kind>``, ``transition-label``, ``special:<kind>``), so a test
can find what was drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clients.plot_labels import transition_name, value_label
from clients.plot_paths import CurveMark
from clients.plot_style import MARKERS, transition_style
from clients.result import Transition

LABEL, PLACER = "transition-label", "transition-label-placer"
#: Pixels kept free between two value labels of one row.
GAP = 3.0
#: Points between the top of the axes and the first row of value labels, and from one row to the next.
ROW_OFFSET, ROW_HEIGHT = 2.0, 9.0


def figure_renderer(ax: Any) -> Any:
    canvas = ax.figure.canvas
    get = getattr(canvas, "get_renderer", None)
    if get is not None:
        return get()
    from matplotlib.backend_bases import _get_renderer  # a backend without its own: draw once to get one

    return _get_renderer(ax.figure)


def _overlaps(box: Any, placed: Sequence[Any]) -> bool:
    return any(box.x0 < other.x1 + GAP and other.x0 < box.x1 + GAP for other in placed)


def place_labels(texts: Sequence[Any], renderer: Any, margin: float = 0.0) -> int:
    """Stack value labels (annotations just above the axes, offset in points) in rows: each goes to the lowest row
    where it overlaps no label already placed, each label counted ``margin`` times wider than it is (room for the
    axes to shrink when the figure is laid out). Returns the number of rows used."""
    rows: list[list[Any]] = []
    for text in sorted(texts, key=lambda t: t.xy[0]):
        for r in range(len(texts)):
            if r == len(rows):
                rows.append([])
            text.set_position((0.0, ROW_OFFSET + ROW_HEIGHT * r))
            box = text.get_window_extent(renderer)
            grow = margin * box.width / 2
            box = box.from_extents(box.x0 - grow, box.y0, box.x1 + grow, box.y1)
            if not _overlaps(box, rows[r]):
                rows[r].append(box)
                break
    return len(rows)


def _add_placer(ax: Any) -> None:
    """An artist that places the axes' value labels again when the figure is drawn, at its final layout (a layout
    engine may have narrowed the axes since the labels were written); drawn before the labels it moves."""
    if any(a.get_gid() == PLACER for a in ax.artists):
        return
    from matplotlib.artist import Artist

    class LabelPlacer(Artist):
        def draw(self, renderer: Any) -> None:
            place_labels([t for t in ax.texts if t.get_gid() == LABEL], renderer)

    placer = LabelPlacer()
    placer.set_zorder(-100)
    placer.set_gid(PLACER)
    ax.add_artist(placer)


def _title_above(ax: Any, rows: int) -> None:
    """Titles of these axes go above the rows of value labels (a title set later with ``set_title`` takes its own
    ``pad``)."""
    import matplotlib

    offset = getattr(ax, "_set_title_offset_trans", None)  # the setter behind set_title(pad=…)
    if offset is not None:
        offset(float(matplotlib.rcParams["axes.titlepad"]) + ROW_HEIGHT * rows)


def special_name(kind: str, type_: str | None = None, event: str | None = None,
                 continuous: bool | None = None) -> str:
    """A special point's name on a figure: its kind (:func:`~clients.plot_labels.transition_name`), and for an
    engine event the event too ("first order (aligned onset)", "spinodal (aligned well)"). An event filed as a
    first-order point where the drawn quantity is ``continuous`` (plain mean field's alignment onset: m_S passes it
    smoothly at finite d) is named by the event alone, "alignment onset (continuous)": it is not a jump."""
    name = transition_name(kind, type_)
    if not event:
        return name
    words = event.replace("_", " ")
    if continuous and name == "first order":
        return f"{words} (continuous)"
    return f"{name} ({words})"


def _kind_of(name: str) -> str:
    """The kind a name begins with ("first order (aligned onset)": first order); an onset named alone: event."""
    base = name.split(" (")[0]
    return base if base in MARKERS else "event"


def _style_of(name: str) -> dict[str, Any]:
    """An event is drawn in its kind's style ("first order (aligned onset)" as a first-order point), a continuous
    onset in the events' style."""
    return transition_style(_kind_of(name))


def _continuous(x: float | None, jumps: Sequence[float] | None) -> bool | None:
    """Whether the drawn quantity is continuous at a transition at ``x`` (None: not known): it is wherever the
    equilibrium path drawn for it has no jump."""
    if jumps is None or x is None:
        return None
    return not any(abs(j - x) <= 1e-9 * max(1.0, abs(x)) for j in jumps)


def mark_transitions(ax: Any, transitions: Sequence[Transition], *, values: bool = True,
                     legend: bool = True, color: str | None = None, jumps: Sequence[float] | None = None) -> int:
    """A thin vertical line at each transition, styled by its kind, and (``values``) its value just above the
    axes, over its line; the values of every result drawn on these axes are placed together, and the axes' titles
    above them. ``color``: the lines and values in the colour of the result's curve (several results on one
    axes), the legend naming each kind once by its line style. ``jumps``: where the drawn equilibrium jumps (an
    event filed as first order is continuous elsewhere, :func:`special_name`). Returns the number of rows of value
    labels."""
    # names already in the legend and values already written, by an earlier result drawn on these axes
    seen = {str(ln.get_label()) for ln in ax.get_lines() if str(ln.get_gid()).startswith("transition:")}
    labels = [t for t in ax.texts if t.get_gid() == LABEL]
    for tr in transitions:
        x = tr.parameter
        if x is None:
            continue
        name = special_name(tr.kind, tr.type, tr.event, _continuous(x, jumps))
        style = _style_of(name)
        if color is not None:
            if legend and name not in seen:  # the kind's entry in a neutral colour: the colour is the curve's
                ax.plot([], [], linewidth=0.7, label=name, gid=f"transition:{tr.kind}",
                        **{**style, "color": "0.35"})
            style["color"] = color
        ax.axvline(x, linewidth=0.7, alpha=0.55, zorder=1, gid=f"transition:{tr.kind}",
                   label=name if legend and name not in seen and color is None else None, **style)
        seen.add(name)
        if values:
            labels.append(ax.annotate(value_label(x), (x, 1.0), xycoords=ax.get_xaxis_transform(),
                                      xytext=(0.0, ROW_OFFSET), textcoords="offset points", ha="center",
                                      va="bottom", fontsize="x-small", color=style["color"],
                                      gid=LABEL, annotation_clip=False))
    if not labels:
        return 0
    rows = place_labels(labels, figure_renderer(ax), margin=0.5)
    _add_placer(ax)
    _title_above(ax, rows)
    return rows


def mark_on_curves(ax: Any, marks: Sequence[CurveMark], jumps: Sequence[float] | None = None) -> None:
    """Each special point where it lies on its curve: a fold at its turning point, a stability loss on the branch
    that loses it, a first-order point at both ends of its jump."""
    for m in marks:
        name = special_name(m.kind, m.type, m.event, _continuous(m.parameter, jumps))
        style = _style_of(name)
        ax.plot([m.parameter], [m.y], linestyle="none", marker=MARKERS[_kind_of(name)], markersize=4.5,
                markerfacecolor="white" if _kind_of(name) == "spinodal" else style["color"],
                markeredgecolor=style["color"], zorder=6, gid=f"special:{m.kind}")


#: gid of a panel letter (the axes' left title).
PANEL = "panel-letter"


def panel_letters(axes: Any, start: str = "a") -> None:
    """(a), (b), … at the top left of each axes of a multi-panel figure, in reading order (rows first), as the
    axes' left title, above the rows of transition values written over the axes."""
    for k, ax in enumerate(list(getattr(axes, "flat", axes))):
        ax.set_title(f"({chr(ord(start) + k)})", loc="left", fontweight="bold", gid=PANEL)
        values = [t for t in ax.texts if t.get_gid() == LABEL]
        if values:  # set_title has reset the titles' offset: above the values again
            _title_above(ax, place_labels(values, figure_renderer(ax), margin=0.5))
