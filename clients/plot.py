"""Figures of SaddleLab results (matplotlib, imported only when a figure is drawn).

- :func:`branch_diagram`: every traced branch of a sweep, stable solid (thinner where metastable) and unstable
  dashed, smooth through folds, the equilibrium path with a vertical jump at each first-order point, every special
  point marked with its value;
- :func:`learning_curve`: the equilibrium's quantity along the sweep, jumps and transitions included, the other
  traced branches beside it in its colour (metastable thinner, unstable dashed);
- :func:`potential`: the potential U(ρ) itself, both signs of ρ, with its wells and barriers marked;
- :func:`phase_diagram`: a two-parameter result: the equilibrium over a grid with its phase regions named and its
  transitions as each row located them, and/or the lines traced by a boundary job, named alike;
- :func:`theory_vs_experiment`: the theory's branches and equilibrium as lines, the sampled finite network as
  points with Monte-Carlo error bars, hollow (and named in the caption) where they fail the convergence rule;
- :func:`specialisation_map`: per-neuron specialisation of a two-hidden-layer network, theory beside experiment.

Labels are the papers' symbols, from the table entries every result carries (``quantities``), so a result read from
a file is labelled like a live one; ``symbols=`` (a :class:`~clients.client.Client` or a table) overrides them, and
a quantity with no entry is labelled by its dotted name. A caption line names the
fixed parameters (from the result's ``model``). :func:`paper_style`, :func:`figure` and :func:`save` give journal
widths and vector output; :func:`panel_letters` letters a multi-panel figure and :func:`tidy_log_ticks` gives a log
axis plain, uncrowded tick labels. Legends name branches in words, once per meaning, inside the axes or under the
caption. Each function returns the ``Axes`` it drew on (a new figure's unless ``ax`` is given).
A result may also be given as its arrays (``to_xarray``, or a netCDF file read back with ``open_netcdf``): it is
drawn, and labelled, as its JSON. A quantity is named by its dotted name (``class_distance.D2``); one the result does
not report raises :class:`~clients.names.UnknownQuantity`, which lists the names it does, before anything is drawn.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from clients.install_hints import imported
from clients.names import UnknownQuantity, is_number
from clients.plot_convergence import HOLLOW, UNCONVERGED, Unconverged, passes, unconverged_note
from clients.plot_labels import Symbols, caption, line_name, transition_name
from clients.plot_legend import (
    LEGEND_ENTRY,
    LEGEND_INSIDE,
    METASTABLE,
    OWN_FIGURE,
    UNSTABLE,
    branch_title,
    place_legend,
    style_entry,
)
from clients.plot_marks import mark_on_curves, mark_transitions, panel_letters
from clients.plot_paths import (
    EquilibriumPath,
    curve_marks,
    equilibrium_path,
    equilibrium_spans,
    jumps_of,
    split_metastable,
    stretches,
    traced,
    varies,
)
from clients.plot_style import (
    EQUILIBRIUM_STYLE,
    EQUILIBRIUM_WIDTH,
    METASTABLE_WIDTH,
    STABILITY_STYLE,
    figure,
    paper_style,
    save,
    tidy_log_ticks,
    transition_style,
)
from clients.plot_unexplained import draw_unexplained
from clients.result import Line, Result, as_result
from clients.tables import check_scalar, series

__all__ = [
    "Symbols",
    "branch_diagram",
    "figure",
    "learning_curve",
    "panel_letters",
    "paper_style",
    "phase_diagram",
    "potential",
    "save",
    "specialisation_map",
    "theory_vs_experiment",
    "tidy_log_ticks",
]

#: The gid of a figure's caption (an annotation under the x label).
CAPTION = "caption"
#: ``caption=``: True, False, or the fields to leave out of it besides the swept ones.
Caption = bool | Sequence[str]


def _pyplot() -> Any:
    return imported("matplotlib.pyplot", "clients.plot", "plot")


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    fig, ax = _pyplot().subplots(figsize=(6.4, 4.4), layout="constrained")
    fig.set_gid(OWN_FIGURE)
    return ax


def _colors() -> list[str]:
    return list(_pyplot().rcParams["axes.prop_cycle"].by_key().get("color", ["C0"]))


def _one_parameter(result: Result) -> str:
    names = result.parameters
    if len(names) != 1:
        raise ValueError("this plot takes a one-parameter sweep; use phase_diagram() for two parameters")
    return names[0]


def _caption_width(ax: Any) -> int:
    """About how many characters of a caption fit under the axes."""
    points = ax.figure.get_figwidth() * ax.get_position().width * 72.0
    return max(20, int(points / (0.5 * _pyplot().rcParams["font.size"] * 0.83)))


def _wrap(ax: Any, text: str) -> str:
    return textwrap.fill(text, _caption_width(ax))


def _caption(ax: Any, model: Mapping[str, Any] | None, symbols: Symbols, swept: Sequence[str], show: Caption,
             note: str | None = None) -> None:
    """The caption line(s) under the axes' x label, left-aligned with the axes and broken to their width, and
    ``note`` (a line that says what the figure draws differently, e.g. which points did not converge) after
    them; ``show`` False: none; a sequence of field names: without those too (fields that differ between results
    drawn on one axes)."""
    if show is False:
        return
    swept = [*swept, *(() if show is True else show)]
    text = caption(model, symbols, tuple(swept), width=_caption_width(ax))
    if note:
        text = "\n".join(filter(None, (text, _wrap(ax, note))))
    if text:
        # anchored to the x label at draw time, so it stays below it whatever the layout does to the axes
        ax.annotate(text, (0.0, 0.0), xycoords=("axes fraction", ax.xaxis.label), xytext=(0.0, -4.0),
                    textcoords="offset points", ha="left", va="top", fontsize="small", gid=CAPTION,
                    annotation_clip=False)


def _first_order_parameter(result: Result) -> str | None:
    for k in range(len(result.points)):
        for name in result.names_in("order_parameters", k):
            if is_number(result.value_at(k, name)):
                return name
    return None


def _draw_branches(ax: Any, result: Result, quantity: str, names: Sequence[str], prefix: str = "",
                   linewidth: float = 1.4, color: str | None = None, label_branches: bool = True,
                   equilibrium_too: bool = True) -> None:
    """Each traced branch's stretches: the equilibrium and other stable stretches solid (a metastable one, stable
    but not the equilibrium, thinner), unstable ones dashed; a colour per branch (or ``color`` for all). Labelled
    ``prefix + branch`` (the branch in words, once per name), or ``prefix`` alone (without its ": ") where one
    branch is drawn in one colour; ``label_branches`` False: only the style entries. ``equilibrium_too`` False:
    the equilibrium's own stretches are left to the caller."""
    colors = _colors()
    titles = list(dict.fromkeys(branch_title(b) for b in result.branch_names))
    color_of = {t: color or colors[k % len(colors)] for k, t in enumerate(titles)}
    drawn = stretches(result, quantity, names)
    alone = color is not None and len({branch_title(s.branch) for s in drawn}) == 1 and prefix
    labelled = set(ax.get_legend_handles_labels()[1])
    unstable_unnamed = metastable = False
    has_equilibrium = bool(equilibrium_spans(result))
    for s, equilibrium in split_metastable(result, drawn):
        title = branch_title(s.branch)
        if equilibrium and not equilibrium_too:
            continue
        label = prefix.rstrip(": ") if alone else f"{prefix}{title}"
        thin = s.stable is True and not equilibrium and has_equilibrium
        metastable |= thin
        unstable_unnamed |= s.stable is False and title != "unstable"
        ax.plot(s.x, s.y, color=color_of.get(title, "0.4"), linestyle=STABILITY_STYLE[s.stable],
                linewidth=linewidth * (METASTABLE_WIDTH if thin else 1.0), gid=f"branch:{s.branch}")
        if label_branches and label not in labelled:
            # the entry drawn at full width (the first stretch drawn may be a thin metastable one), solid unless
            # the branch is never stable
            style = STABILITY_STYLE[True] if any(d.stable is not False and branch_title(d.branch) == title
                                                 for d in drawn) else STABILITY_STYLE[False]
            ax.plot([], [], color=color_of.get(title, "0.4"), linestyle=style, linewidth=linewidth, label=label,
                    gid=LEGEND_ENTRY)
            labelled.add(label)
    if unstable_unnamed:
        style_entry(ax, UNSTABLE, linestyle=STABILITY_STYLE[False], linewidth=linewidth)
    if metastable:
        style_entry(ax, METASTABLE, linestyle=STABILITY_STYLE[True], linewidth=linewidth * METASTABLE_WIDTH)


def _jumps(path: EquilibriumPath, result: Result) -> list[float]:
    """The transitions of a result where its drawn equilibrium jumps (an event elsewhere is a continuous onset)."""
    at = [t.parameter for t in result.transitions if t.parameter is not None]
    return jumps_of(path, at)


def _draw_equilibrium(ax: Any, path: EquilibriumPath) -> None:
    width = EQUILIBRIUM_WIDTH * _pyplot().rcParams["lines.linewidth"]
    ax.plot(path.x, path.y, label="equilibrium", gid="equilibrium", linewidth=width, **EQUILIBRIUM_STYLE)


def branch_diagram(
    result: Mapping[str, Any],
    quantity: str | None = None,
    ax: Any = None,
    *,
    symbols: Any = None,
    equilibrium: bool = True,
    transitions: bool = True,
    caption: Caption = True,
) -> Any:
    """Every branch's ``quantity`` (default: the first order parameter) along a one-parameter sweep, from the
    curves the continuation traced: stable solid, unstable dashed, folds closed; the equilibrium path (thick grey)
    jumps vertically at each first-order point; each transition marked on its curve, with a thin line and its
    value. A grid sweep (no curves) is drawn at its requested values only."""
    result = as_result(result)
    parameter = _one_parameter(result)
    quantity = quantity or _first_order_parameter(result)
    if quantity is None:
        raise ValueError("the result reports no order parameter; pass quantity=")
    check_scalar(result, quantity)
    labels = result.symbols(symbols)
    ax = _axes(ax)
    _draw_branches(ax, result, quantity, result.branch_names)
    path = equilibrium_path(result, quantity)
    if equilibrium:
        _draw_equilibrium(ax, path)
    if transitions:
        jumps = _jumps(path, result)
        mark_on_curves(ax, curve_marks(result, quantity), jumps=jumps)
        mark_transitions(ax, result.transitions, jumps=jumps)
    ax.set_xlabel(labels(parameter))
    ax.set_ylabel(labels(quantity))
    _caption(ax, result.model, labels, [parameter], caption)
    place_legend(ax)
    return ax


def _default_learning_quantity(result: Result, labels: Symbols) -> str:
    """The theory's headline quantity (``role: headline`` in the result's ``quantities`` or in ``symbols=``) if it
    varies along the equilibrium, else the first order parameter that does (a constant curve says nothing)."""
    candidates = [*labels.headlines(), *result.names_in("order_parameters")]
    for name in candidates:
        if varies(result.values(name)):
            return name
    raise ValueError(f"no quantity among {', '.join(candidates)} varies along this sweep; pass quantity=")


def learning_curve(
    result: Mapping[str, Any],
    quantity: str | None = None,
    ax: Any = None,
    *,
    symbols: Any = None,
    logx: bool = False,
    logy: bool = False,
    label: str | None = None,
    transitions: bool = True,
    caption: Caption = True,
    color: str | None = None,
) -> Any:
    """The equilibrium's ``quantity`` along the sweep (default: the theory's headline quantity if it varies, else
    the first order parameter that varies), from the traced curves where the result
    has them: a vertical jump at each first-order point, the transitions marked with their values."""
    result = as_result(result)
    parameter = _one_parameter(result)
    labels = result.symbols(symbols)
    quantity = quantity or _default_learning_quantity(result, labels)
    check_scalar(result, quantity)
    ax = _axes(ax)
    jumps = _jumps(equilibrium_path(result, quantity), result)
    if traced(result, quantity):
        path = equilibrium_path(result, quantity)
        (line,) = ax.plot(path.x, path.y, label=label or "equilibrium", gid="equilibrium", color=color)
        # every other traced stretch in the same colour: metastable thinner, unstable dashed
        _draw_branches(ax, result, quantity, result.branch_names, linewidth=line.get_linewidth(),
                       color=line.get_color(), label_branches=False, equilibrium_too=False)
    else:
        xs, ys = series(result, quantity)
        (line,) = ax.plot(xs, [math.nan if y is None else y for y in ys], marker=".", label=label or "equilibrium",
                          gid="equilibrium", color=color)
    if transitions:
        mark_transitions(ax, result.transitions, color=line.get_color() if color is not None else None,
                         jumps=jumps)
    ax.set_xscale("log" if logx else "linear")
    ax.set_yscale("log" if logy else "linear")
    tidy_log_ticks(ax)
    ax.set_xlabel(labels(parameter))
    ax.set_ylabel(labels(quantity))
    _caption(ax, result.model, labels, [parameter], caption)
    place_legend(ax)
    return ax


def _level(pt: dict[str, Any]) -> float | None:
    """U(ρ) − U(0) of a well or barrier (``f_minus_f0``)."""
    value = pt.get("f_minus_f0")
    return float(value) if is_number(value) else None


#: gid of a well's name, written this many points under its marker.
WELL_NAME, WELL_NAME_OFFSET = "well-name", 11.0


def _room_below(ax: Any, lowest: float) -> None:
    """Lower the y axis until the names written under the lowest wells fit inside the axes, clear of the tick labels
    (a quarter more room than the axes' present height needs: a layout may still shorten them)."""
    from matplotlib.font_manager import FontProperties

    name = FontProperties(size="x-small").get_size_in_points() * 1.3
    room = (WELL_NAME_OFFSET + name + 2.0) * 1.25
    height = ax.get_window_extent().height * 72.0 / ax.figure.dpi
    low, high = ax.get_ylim()
    r = min(room / height, 0.4)
    ax.set_ylim(min(low, (lowest - r * high) / (1.0 - r)), high)


def potential(data: Mapping[str, Any], ax: Any = None, *, symbols: Any = None, caption: Caption = True) -> Any:
    """The potential U(ρ) − U(0) itself over both signs of ρ, its wells (filled triangles, named) and barriers
    (open circles) marked at ±ρ.

    ``data`` is a solve response or a sweep point of a theory that reports ``observables.potential_curve``
    (``rubin_cavity`` with ``mode: "potential"`` and ``potential_samples`` > 0, e.g. 201); the wells and barriers
    are its ``potential_wells`` and ``barriers``, listed at ρ ≥ 0 (the potential is even in ρ).
    """
    data = as_result(data)
    rho, value = data.value_at(0, "potential_curve.rho"), data.value_at(0, "potential_curve.value")
    if not rho:
        raise ValueError("no potential curve in these results: solve rubin_cavity with mode 'potential' and "
                         "\"potential_samples\": 201 (observables.potential_curve)")
    labels = data.symbols(symbols)
    ax = _axes(ax)
    ax.axhline(0.0, color="0.75", linewidth=0.6, zorder=0)
    ax.plot(rho, value, color="C0", label="potential", gid="potential")
    named: set[str] = set()
    lowest = math.inf
    for w in data.records("potential_wells"):
        level = _level(w)
        if level is None:
            continue
        lowest = min(lowest, level)
        xs = sorted({w["rho"], -w["rho"]})
        ax.plot(xs, [level] * len(xs), marker="v", markersize=7, linestyle="none", color="C3", gid="well",
                label=None if "wells" in named else "wells")
        named.add("wells")
        text = w.get("kind") or "well"
        if is_number(w.get("weight")):
            text += f" (weight {w['weight']:.2g})"
        ax.annotate(text, (w["rho"], level), xytext=(0, -WELL_NAME_OFFSET), textcoords="offset points",
                    fontsize="x-small", ha="center", va="top", gid=WELL_NAME)
    for b in data.records("barriers"):
        level = _level(b)
        if level is None:
            continue
        xs = sorted({b["rho"], -b["rho"]})
        ax.plot(xs, [level] * len(xs), marker="o", markersize=6, linestyle="none", markerfacecolor="none",
                color="C1", gid="barrier", label=None if "barriers" in named else "barriers")
        named.add("barriers")
    if math.isfinite(lowest):
        _room_below(ax, lowest)
    ax.set_xlabel(labels("rho"))
    ax.set_ylabel(labels("potential_curve.value"))
    _caption(ax, data.model, labels, (), caption)
    place_legend(ax)
    return ax


def _line_xy(line: Line) -> tuple[list[float], list[float]]:
    """(p2 values, p1 values) of a line."""
    return [q[1] for q in line.points], [q[0] for q in line.points]


def _grid_line_type(result: Result, line: Line) -> str | None:
    """A grid line's transition type (fold, bifurcation, …), from the row transitions it joins."""
    branches = sorted(line.name.split(":", 1)[-1].split("/")) if ":" in line.name else []
    for tr in result.transitions:
        if tr.kind == line.kind and sorted(tr.branches) == branches:
            return tr.type
    return None


def regions_of(result: Result) -> list[str | None]:
    """The name of each grid point's phase: the theory's ``phase`` observable where it reports one (GFL, GMFL-II;
    universal, specialized), else its equilibrium branch."""
    return [phase if isinstance(phase, str) else eq
            for phase, eq in zip(result.values("phase"), result.equilibria, strict=True)]


def _region_anchor(xs: list[float], ys: list[float], others: list[tuple[float, float]],
                   scale: tuple[float, float], box: tuple[float, float, float, float]) -> tuple[float, float]:
    """The point of a region farthest from every point of the other regions (axes scaled to unit range), where
    its name reads clear of the boundaries."""
    if not others:
        return xs[len(xs) // 2], ys[len(ys) // 2]
    (sx, sy), (x_lo, x_hi, y_lo, y_hi) = scale, box

    def clearance(x: float, y: float) -> float:
        # away from the other regions' points, and from the frame (a name in a corner reads as a tick label)
        frame = 1.5 * min((x - x_lo) / sx, (x_hi - x) / sx, (y - y_lo) / sy, (y_hi - y) / sy)
        return min(frame ** 2, *(((x - ox) / sx) ** 2 + ((y - oy) / sy) ** 2 for ox, oy in others))

    return max(zip(xs, ys, strict=True), key=lambda p: clearance(*p))


#: The margin around a boundary job's box, as a fraction of its sides (matplotlib's default axes margin).
BOX_MARGIN = 0.05


def _name_region(ax: Any, x: float, y: float, name: str, color: Any) -> None:
    ax.text(x, y, name, ha="center", va="center", fontsize="large", fontweight="bold", gid="region-name",
            color=color, zorder=7,
            bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})


def _region_names_on(ax: Any) -> set[str]:
    return {t.get_text() for t in ax.texts if t.get_gid() == "region-name"}


def _draw_regions(ax: Any, result: Result, names: bool) -> None:
    groups: dict[str, tuple[list[float], list[float]]] = {}
    for region, at in zip(regions_of(result), result.parameter_values, strict=True):
        xs, ys = groups.setdefault(region or "no equilibrium", ([], []))
        xs.append(at[1])
        ys.append(at[0])
    if not groups:
        return
    all_x = [x for xs, _ in groups.values() for x in xs]
    all_y = [y for _, ys in groups.values() for y in ys]
    scale = ((max(all_x) - min(all_x)) or 1.0, (max(all_y) - min(all_y)) or 1.0)
    colors = _colors()
    named = _region_names_on(ax)  # a boundary job on the same axes has named them already
    for k, (name, (xs, ys)) in enumerate(sorted(groups.items())):
        ax.scatter(xs, ys, s=10, color=colors[k % len(colors)], alpha=0.45, linewidths=0, gid=f"region:{name}",
                   label=f"equilibrium: {name}")
        if names and name not in named:
            others = [(x, y) for other, (oxs, oys) in groups.items() if other != name
                      for x, y in zip(oxs, oys, strict=True)]
            x, y = _region_anchor(xs, ys, others, scale, (min(all_x), max(all_x), min(all_y), max(all_y)))
            _name_region(ax, x, y, name, colors[k % len(colors)])


def _name_probed_regions(ax: Any, result: Result) -> None:
    """A boundary job's phases, each named once at the probe (a solve beside a line) farthest from the probes of the
    other phases."""
    groups: dict[str, tuple[list[float], list[float]]] = {}
    for probe in result.probes:
        xs, ys = groups.setdefault(probe.label or "no equilibrium", ([], []))
        xs.append(probe.point[1])
        ys.append(probe.point[0])
    if not groups:
        return
    box = result.box or {}
    p1, p2 = result.parameters
    (x_lo, x_hi), (y_lo, y_hi) = box.get(p2, (0.0, 1.0)), box.get(p1, (0.0, 1.0))
    scale = ((x_hi - x_lo) or 1.0, (y_hi - y_lo) or 1.0)
    colors = _colors()
    named = _region_names_on(ax)  # a grid diagram on the same axes has named them already
    for k, (name, (xs, ys)) in enumerate(sorted(groups.items())):
        if name in named:
            continue
        others = [(x, y) for other, (oxs, oys) in groups.items() if other != name
                  for x, y in zip(oxs, oys, strict=True)]
        x, y = _region_anchor(xs, ys, others, scale, (x_lo, x_hi, y_lo, y_hi))
        _name_region(ax, x, y, name, colors[k % len(colors)])


def phase_diagram(
    result: Mapping[str, Any],
    ax: Any = None,
    *,
    lines: bool = True,
    points: bool = True,
    regions: bool = True,
    symbols: Any = None,
    caption: Caption = True,
) -> Any:
    """A two-parameter result in the (p2, p1) plane.

    A grid phase diagram: the equilibrium at each grid point, coloured by phase, each phase named on its region
    (``regions``), and the transitions where each row located them (×, not joined: a row cannot tell which line a
    point belongs to). A boundary job: its
    traced lines, styled by kind, its critical points (stars), and each phase named where the job probed it, beside
    a line (``regions``). Lines are named alike by both methods
    (:func:`clients.plot_labels.line_name`: "stability loss (barrier/center)"), with ", per row" or ", traced";
    draw both on one ``ax`` to compare them.
    """
    result = as_result(result)
    names = result.parameters
    if len(names) != 2:
        raise ValueError("phase_diagram() takes a two-parameter result")
    p1, p2 = names
    labels = result.symbols(symbols)
    ax = _axes(ax)
    boundary = result.is_boundary
    if points and not boundary:
        _draw_regions(ax, result, regions)
    if boundary and regions:
        _name_probed_regions(ax, result)
    box = result.box
    if box and p1 in box and p2 in box:
        # the whole box the job searched (where no line is drawn, there is none), with matplotlib's usual margin so
        # that a grid diagram's points on the box's edge stay whole
        for setter, (lo, hi) in ((ax.set_xlim, sorted(box[p2])), (ax.set_ylim, sorted(box[p1]))):
            pad = BOX_MARGIN * (hi - lo)
            setter(lo - pad, hi + pad)
    if lines:
        labelled: set[str] = set()
        for line in result.lines:
            xs, ys = _line_xy(line)
            if boundary:
                name = line_name(line.kind, line.type, line.branches)
                style = transition_style(name.split(" (")[0])
                ax.plot(xs, ys, linewidth=1.6, gid=f"line:{line.kind}",
                        label=None if name in labelled else f"{name}, traced", **style)
            else:
                # A row locates each transition between its grid values and cannot tell which line a point
                # belongs to (a branch's birth and death are one "line" here): markers only, named by kind.
                name = transition_name(line.kind, _grid_line_type(result, line))
                style = {**transition_style(name), "linestyle": "none"}
                ax.plot(xs, ys, marker="x", markersize=5, gid=f"line:{line.kind}",
                        label=None if name in labelled else f"{name}, per row", **style)
            labelled.add(name)
        critical = result.critical_points
        if critical:
            ax.plot([c.point[1] for c in critical], [c.point[0] for c in critical], marker="*",
                    markersize=11, linestyle="none", color="k", label="critical point", gid="critical")
        if boundary:
            draw_unexplained(ax, result)
    ax.set_xlabel(labels(p2))
    ax.set_ylabel(labels(p1))
    _caption(ax, result.model, labels, names, caption, _as_real_note(result, labels) if boundary else None)
    place_legend(ax, fontsize="x-small", below=True)
    return ax


def _as_real_note(result: Result, labels: Any) -> str | None:
    """The caption's note that the lines pass through real values of integer fields (a width N), where a boundary
    job continued them as real numbers."""
    fields = result.data.get("continued_as_real") or []
    if not fields:
        return None
    return f"{' and '.join(labels(f) for f in fields)}: integer fields, continued as real numbers along the lines"


def _x_of(value: Any, x: float | None) -> float:
    """Where an experiment's point is drawn: ``x`` if given, else its parameter ``value``."""
    if x is not None:
        return float(x)
    if value is None:
        raise ValueError("a single experiment has no parameter value; pass x= or run a learning curve")
    return float(value)


def _component(value: Any, component: int | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, list):
        if component is None:
            raise ValueError("a vector observable: pass component=")
        value = value[component]
    return None if value is None else float(value)


def _experiment_model(results: Any) -> Mapping[str, Any] | None:
    request = getattr(results, "request", None)
    model = (request or {}).get("model") if isinstance(request, Mapping) else None
    return model if isinstance(model, Mapping) else None


def theory_vs_experiment(
    results: Any,
    observable: str = "generalization_error",
    ax: Any = None,
    *,
    branches: list[str] | None = None,
    component: int | None = None,
    sweep: Mapping[str, Any] | None = None,
    sweep_quantity: str | None = None,
    sigmas: float = 1.0,
    x: float | None = None,
    logx: bool = False,
    symbols: Any = None,
    transitions: bool = True,
    equilibrium: bool = True,
    caption: Caption = True,
    color: str | None = None,
    theory_label: str = "theory",
) -> Any:
    """The theory's branches as lines and the experiment as points with error bars (±``sigmas`` Monte-Carlo
    standard errors), along a learning curve or a sweep in any parameter (T, α, …).

    ``color``: one colour for the theory and the experiment (several results on one axes, e.g. two widths), whose
    lines are then named ``theory_label`` alone when they are one branch.

    ``results``: an experiment result (a learning curve, or one experiment with ``x=``), or a mapping label ->
    result (e.g. two initialisations), each drawn with its own markers. With ``sweep`` (a ``/v1/sweeps`` result
    in the same parameter) the theory is the sweep's traced branches, stable solid and unstable dashed, its
    equilibrium path with its jumps, and its transitions marked, for the quantity ``sweep_quantity`` (a dotted
    name, e.g. ``class_distance.D2``; default: ``observable``). Without it, each branch's value at the experiments'
    parameter values (from each point's ``theory.comparison``). An observable the experiment does not estimate,
    or a quantity the sweep does not report, raises :class:`~clients.names.UnknownQuantity`.
    """
    given = dict(results) if isinstance(results, Mapping) and "kind" not in results else {"experiment": results}
    runs = {label: as_result(r) for label, r in given.items()}
    estimated = sorted({n for r in runs.values() for n in r.estimated})
    if observable not in estimated:
        raise UnknownQuantity(observable, estimated)
    quantity = sweep_quantity or observable
    if sweep is not None:
        sweep = as_result(sweep)
        check_scalar(sweep, quantity)
    first = next(iter(runs.values()))
    theory = (sweep.theory_name if sweep is not None else None) or first.theory_name or \
        (_experiment_model(first) or {}).get("theory")
    carried = {**first.quantities, **(sweep.quantities if sweep is not None else {})}
    labels = Symbols.of(symbols, theory if isinstance(theory, str) else None, carried)
    ax = _axes(ax)
    colors = _colors()
    if sweep is not None:
        wanted = [b for b in sweep.branch_names if branches is None or b in branches]
        _draw_branches(ax, sweep, quantity, wanted, prefix=f"{theory_label}: ", linewidth=1.3, color=color)
        path = equilibrium_path(sweep, quantity)
        if equilibrium:
            _draw_equilibrium(ax, path)
        if transitions:
            mark_transitions(ax, sweep.transitions, jumps=_jumps(path, sweep))
    else:
        lines: dict[str, tuple[list[float], list[float]]] = {}
        for at, compared in zip(first.parameter_values, first.comparisons_at, strict=True):
            for name, rows in compared.items():
                if branches is not None and name not in branches:
                    continue
                row = rows.get(observable)
                value = _component(row.theory if row is not None else None, component)
                xs, ys = lines.setdefault(name, ([], []))
                xs.append(_x_of(at, x))
                ys.append(math.nan if value is None else value)
        for k, (name, (xs, ys)) in enumerate(lines.items()):
            order = sorted(range(len(xs)), key=xs.__getitem__)
            ax.plot([xs[i] for i in order], [ys[i] for i in order], color=color or colors[k % len(colors)],
                    linewidth=1.3, label=f"{theory_label}: {name}", gid=f"branch:{name}")
    markers = ["o", "s", "^", "D", "v"]
    parameter = first.parameter or (sweep.parameters[0] if sweep is not None else "parameter")
    unconverged: dict[str, list[Unconverged]] = {}
    for k, (label, result) in enumerate(runs.items()):
        rows: dict[bool, tuple[list[float], list[float], list[float]]] = {True: ([], [], []), False: ([], [], [])}
        for at, estimates in zip(result.parameter_values, result.estimates_at, strict=True):
            est = estimates.get(observable)
            if est is None:
                continue
            mean, err = _component(est.mean, component), _component(est.stderr, component)
            if mean is None:
                continue
            rhat, ess = _component(est.rhat, component), _component(est.ess, component)
            ok = passes(rhat, ess)
            xs, ys, es = rows[ok]
            xs.append(_x_of(at, x))
            ys.append(mean)
            es.append(sigmas * (err or 0.0))
            if not ok:
                unconverged.setdefault(label, []).append((xs[-1], rhat, ess))
        color_k = color or ("k" if len(runs) == 1 else f"C{k + 3}")
        for ok, (xs, ys, es) in rows.items():
            if xs:
                ax.errorbar(xs, ys, yerr=es, fmt=markers[k % len(markers)], color=color_k, markersize=4.5,
                            capsize=2.5, linestyle="none", gid=f"experiment:{label}" + ("" if ok else ":unconverged"),
                            markerfacecolor=None if ok else "none",
                            label=f"{label} (±{sigmas:g} s.e.)" if ok or not rows[True][0] else None)
    if unconverged and UNCONVERGED not in ax.get_legend_handles_labels()[1]:
        ax.errorbar([], [], yerr=[], fmt="o", color="0.3", markerfacecolor="none", markersize=4.5, linestyle="none",
                    label=UNCONVERGED, gid=LEGEND_ENTRY)
    ax.set_xscale("log" if logx else "linear")
    tidy_log_ticks(ax)
    ax.set_xlabel(labels(parameter))
    ylabel = labels(observable)
    ax.set_ylabel(ylabel if component is None else f"{ylabel} [{component}]")
    model = (sweep.model if sweep is not None else None) or _experiment_model(first)
    note = unconverged_note(unconverged, labels(parameter)) if unconverged else None
    written = next((t for t in ax.texts if t.get_gid() == CAPTION), None)
    if caption is False and note and written is not None:
        # another result's caption is under these axes already: its unconverged points are named there too
        old = written.get_text()
        if HOLLOW.strip() in " ".join(old.split()):
            more = unconverged_note(unconverged, labels(parameter), head=False)
            lines = old.split("\n")
            start = next(i for i, line in enumerate(lines) if line.startswith("hollow:"))
            hollow = " ".join(" ".join(lines[start:]).split())
            written.set_text("\n".join([*lines[:start], _wrap(ax, f"{hollow}; {more}")]))
        else:
            written.set_text(f"{old}\n{_wrap(ax, note)}")
    else:
        _caption(ax, model, labels, [parameter], caption, note)
    # experiments are scattered over the whole axes: a long legend would cover some of them
    place_legend(ax, below=len(ax.get_legend_handles_labels()[0]) > LEGEND_INSIDE)
    return ax


def _bin_means(x: list[float], y: list[float], edges: list[float]) -> tuple[list[float], list[float]]:
    centres, means = [], []
    for lo, hi in itertools.pairwise(edges):
        inside = [b for a, b in zip(x, y, strict=True) if lo <= a < hi]
        if inside:
            centres.append(0.5 * (lo + hi))
            means.append(sum(inside) / len(inside))
    return centres, means


def _alpha_of(point: Mapping[str, Any]) -> float | None:
    value = point.get("alpha", point.get("parameter"))
    return float(value) if is_number(value) else None


def specialisation_map(
    theory_points: list[dict[str, Any]],
    experiment_points: list[dict[str, Any]] | None = None,
    *,
    layer: int = 1,
    bins: int = 8,
    xmax: float | None = 3.5,
    axes: Any = None,
    symbols: Any = None,
) -> Any:
    """Which neurons have specialised, theory (left) beside experiment (right), one row per α.

    ``theory_points``: sweep points (or solve results with an ``alpha``) of the two-hidden-layer ``hciz_mlp``
    theory, whose ``order_parameters`` hold ``v2`` (|v₂| per atom), ``Q1`` (per atom), ``v`` and ``Q2`` (rows: readout
    atoms). ``experiment_points``: dicts ``{"alpha", "v2": [|v₂ᵢ| per first-layer neuron], "Q1": [...], "Q2": [...]}``
    (per-neuron overlaps with the teacher, Q2 per first-layer neuron for one readout class), matched by α.
    Layer 1 draws Q₁ against |v₂| (experiment: neurons as dots, their means in ``bins`` bins of |v₂|); layer 2
    draws Q₂(v, v₂) as one curve per readout value |v|. ``xmax`` cuts the |v₂| axis (the outer atoms of N(0, 1)
    carry almost no neurons). Returns the (rows, 2) array of axes.
    """
    plt = _pyplot()
    if layer not in (1, 2):
        raise ValueError("layer must be 1 or 2")
    theory = {id(p): as_result(p) for p in theory_points}
    carried = next((r.quantities for r in theory.values() if r.quantities), None)
    labels = Symbols.of(symbols, "hciz_mlp", carried)
    experiment_points = experiment_points or []
    rows = sorted(theory_points, key=lambda p: _alpha_of(p) or 0.0)
    own = axes is None  # a figure of its own gets panel letters; axes passed in are lettered by their figure
    if axes is None:
        _, axes = plt.subplots(len(rows), 2, figsize=(8, 2.2 * len(rows)), sharex=True, sharey=True, squeeze=False,
                               layout="constrained")
    overlap = labels(f"Q{layer}")
    for r, point in enumerate(rows):
        alpha = _alpha_of(point)
        v2, q1, q2, v = (theory[id(point)].value_at(0, name) for name in ("v2", "Q1", "Q2", "v"))
        if v2 is None or q1 is None:
            raise ValueError("theory points need order_parameters v2, Q1 and Q2 (two-hidden-layer hciz_mlp)")
        left, right = axes[r][0], axes[r][1]
        if layer == 1:
            left.plot(v2, q1, marker="o", color="C0")
        else:
            for readout, row in zip(v or [1.0], q2, strict=True):
                left.plot(v2, row, marker="o", label=f"|v| = {readout:.3g}")
            if len(q2) > 1:
                left.legend(fontsize=7, loc="best")
        left.set_ylabel(f"{overlap}" + (f"  ({labels('alpha')} = {alpha:g})" if alpha is not None else ""))
        exp = next((e for e in experiment_points if alpha is not None and _alpha_of(e) is not None
                    and abs(_alpha_of(e) - alpha) < 1e-9), None)
        if exp is not None:
            x, y = list(exp["v2"]), list(exp["Q1" if layer == 1 else "Q2"])
            right.plot(x, y, linestyle="none", marker=".", color="0.6", label="neurons")
            top = max(x) if x else 1.0
            edges = [top * i / bins for i in range(bins)] + [top * (1 + 1e-12)]
            cx, cy = _bin_means(x, y, edges)
            right.plot(cx, cy, marker="s", color="C3", label="bin means")
            right.legend(fontsize=7, loc="best")
        else:
            right.text(0.5, 0.5, "no experiment", ha="center", va="center", transform=right.transAxes, color="0.5")
        for ax in (left, right):
            ax.set_ylim(-0.05, 1.05)
            if xmax is not None:
                ax.set_xlim(0.0, xmax)
    axes[0][0].set_title("theory")
    axes[0][1].set_title("experiment")
    readout = labels("v2")
    readout = readout if readout != "v2" else r"$|v_2|$"
    axes[-1][0].set_xlabel(f"{readout} (effective readout)")
    axes[-1][1].set_xlabel(f"{readout} (effective readout)")
    if own:
        panel_letters(axes)
    return axes

