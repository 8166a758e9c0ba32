"""Plots of SaddleLab results (matplotlib, imported only when a plot is drawn).

- :func:`learning_curve`: an equilibrium quantity (test error, …) against the swept parameter;
- :func:`branch_diagram`: every branch of a sweep, stable solid and unstable dashed, the
  equilibrium highlighted, spinodals and first-order points marked;
- :func:`potential`: a potential with its wells (and barriers) marked;
- :func:`phase_diagram`: a two-parameter result: the equilibrium over a grid with its transitions joined
  row by row, or the lines traced by a boundary job with their critical points;
- :func:`theory_vs_experiment`: the theory's branches as lines, the sampled finite network as points with
  error bars, along a learning curve or a sweep in T;
- :func:`specialisation_map`: per-neuron specialisation of a two-hidden-layer network, theory beside
  experiment, one row per α.

Each returns the matplotlib ``Axes`` it drew on (a new figure's unless ``ax`` is given). A quantity is named by
its dotted name (``class_distance.D2``); a name the result does not report raises
:class:`~clients.names.UnknownQuantity`, which lists the names it does, before anything is drawn.
"""

from __future__ import annotations

import itertools
from typing import Any

from clients.names import UnknownQuantity, is_number
from clients.tables import branch_names, branch_of, check_scalar, parameter_names, series, value_of

LEARNING_QUANTITIES = ("generalization_error", "test_mse", "mmse", "test_error")
FIRST_ORDER_STYLE = {"color": "crimson", "linestyle": "--", "linewidth": 1.2}
SPINODAL_STYLE = {"color": "0.35", "linestyle": ":", "linewidth": 1.2}


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("clients.plot needs matplotlib: pip install matplotlib") from exc
    return plt


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots()
    return ax


def _one_parameter(result: dict[str, Any]) -> str:
    names = parameter_names(result)
    if len(names) != 1:
        raise ValueError("this plot takes a one-parameter sweep; use phase_diagram() for two parameters")
    return names[0]


def mark_transitions(ax: Any, result: dict[str, Any], label: bool = True) -> None:
    """Vertical lines at the sweep's transitions: dashed red for first-order points, dotted grey for spinodals."""
    seen: set[str] = set()
    for tr in result.get("transitions", []):
        if tr.get("parameter") is None:
            continue
        style = FIRST_ORDER_STYLE if tr["kind"] == "first_order" else SPINODAL_STYLE
        name = "first-order" if tr["kind"] == "first_order" else "spinodal"
        ax.axvline(tr["parameter"], label=name if label and name not in seen else None, **style)
        seen.add(name)
        if tr["kind"] == "first_order":
            ax.annotate(f"{tr['parameter']:.4g}", (tr["parameter"], 1.0), xycoords=("data", "axes fraction"),
                        xytext=(2, -12), textcoords="offset points", color=style["color"], fontsize=8)


def learning_curve(
    result: dict[str, Any],
    quantity: str | None = None,
    ax: Any = None,
    *,
    logx: bool = False,
    logy: bool = False,
    label: str | None = None,
    transitions: bool = True,
) -> Any:
    """The equilibrium's ``quantity`` (default: the first of generalization_error, test_mse, mmse present)."""
    parameter = _one_parameter(result)
    if quantity is None:
        first = result["points"][0] if result["points"] else {}
        quantity = next((q for q in LEARNING_QUANTITIES if value_of(first, q) is not None), None)
        if quantity is None:
            raise ValueError(f"no learning quantity among {LEARNING_QUANTITIES}; pass quantity=")
    check_scalar(result, quantity)
    xs, ys = series(result, quantity)
    ax = _axes(ax)
    ax.plot(xs, [float("nan") if y is None else y for y in ys], marker=".", label=label or quantity)
    if transitions:
        mark_transitions(ax, result)
    ax.set_xscale("log" if logx else "linear")
    ax.set_yscale("log" if logy else "linear")
    ax.set_xlabel(parameter)
    ax.set_ylabel(quantity)
    ax.legend(loc="best", fontsize=8)
    return ax


def _converged_branch(point: dict[str, Any], name: str) -> dict[str, Any] | None:
    b = branch_of(point, name)
    return b if b is not None and b.get("converged") else None


def _runs(xs: list[float], ys: list[Any], stable: list[Any]) -> list[tuple[list[float], list[float], Any]]:
    """Consecutive stretches where the branch exists with one stability."""
    out: list[tuple[list[float], list[float], Any]] = []
    cur: tuple[list[float], list[float], Any] | None = None
    for x, y, s in zip(xs, ys, stable, strict=True):
        if y is None:
            cur = None
            continue
        if cur is None or cur[2] != s:
            # Start the new stretch at the previous point so the curve stays connected.
            cur = ([cur[0][-1], x], [cur[1][-1], y], s) if cur is not None else ([x], [y], s)
            out.append(cur)
        else:
            cur[0].append(x)
            cur[1].append(y)
    return out


def branch_diagram(
    result: dict[str, Any],
    quantity: str = "rho",
    ax: Any = None,
    *,
    equilibrium: bool = True,
    transitions: bool = True,
) -> Any:
    """Every branch's ``quantity`` along the sweep: stable solid, unstable dashed; equilibrium highlighted."""
    parameter = _one_parameter(result)
    check_scalar(result, quantity)
    ax = _axes(ax)
    colors = _pyplot().rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    for k, name in enumerate(branch_names(result)):
        xs, ys, st = [], [], []
        for pt in result["points"]:
            b = _converged_branch(pt, name)
            v = value_of(b, quantity) if b is not None else None
            xs.append(pt["parameter"])
            ys.append(v if is_number(v) else None)
            st.append(b.get("stable") if b is not None else None)
        color = colors[k % len(colors)]
        labelled = False
        for rx, ry, stable in _runs(xs, ys, st):
            ax.plot(rx, ry, color=color, linestyle="-" if stable else "--", linewidth=1.4,
                    label=None if labelled else name)
            labelled = True
    if equilibrium:
        ex, ey = [], []
        for pt in result["points"]:
            v = value_of(pt, quantity) if pt.get("equilibrium") is not None else None
            ex.append(pt["parameter"])
            ey.append(float("nan") if not isinstance(v, (int, float)) else v)
        ax.plot(ex, ey, color="k", alpha=0.18, linewidth=6, label="equilibrium", zorder=0)
    if transitions:
        mark_transitions(ax, result)
    ax.set_xlabel(parameter)
    ax.set_ylabel(quantity)
    ax.legend(loc="best", fontsize=8)
    return ax


def _level(pt: dict[str, Any]) -> float | None:
    """F(ρ²) − F(0) of a well or barrier (``f_minus_f0``; results from before it had only ``depth``, so signed)."""
    return pt.get("f_minus_f0", pt.get("depth"))


def potential(data: dict[str, Any], ax: Any = None, *, width: float = 0.25) -> Any:
    """A potential with its wells (filled triangles) and barriers (open circles) marked.

    ``data`` is a solve response, a sweep point or an observables dict. When the theory reports a
    sampled curve (``observables.potential_curve = {"rho": [...], "value": [...]}``) it is drawn;
    otherwise each stationary point gets its local quadratic, depth + curvature (ρ − ρ*)²/2, over
    ``±width``, drawn thin and labelled as such.
    """
    obs = data.get("observables", data)
    wells = obs.get("potential_wells") or []
    barriers = obs.get("barriers") or []
    if not wells and not obs.get("potential_curve"):
        raise ValueError("no potential in these results (expected observables.potential_wells)")
    ax = _axes(ax)
    curve = obs.get("potential_curve")
    if curve:
        ax.plot(curve["rho"], curve["value"], color="C0", label="potential")
    else:
        label = "local quadratic"
        for pt in [*wells, *barriers]:
            if pt.get("curvature") is None or _level(pt) is None:
                continue
            xs = [pt["rho"] + width * (i / 20 - 1) for i in range(41)]
            ys = [_level(pt) + 0.5 * pt["curvature"] * (x - pt["rho"]) ** 2 for x in xs]
            ax.plot(xs, ys, color="0.6", linewidth=0.9, label=label)
            label = None
    for w in wells:
        ax.plot(w["rho"], _level(w), marker="v", markersize=9, linestyle="none", color="C3")
        text = w.get("kind", "well")
        if w.get("weight") is not None:
            text += f" (weight {w['weight']:.2g})"
        ax.annotate(text, (w["rho"], _level(w)), xytext=(4, -14), textcoords="offset points", fontsize=8)
    for b in barriers:
        ax.plot(b["rho"], _level(b), marker="o", markersize=7, linestyle="none", markerfacecolor="none",
                color="C1")
    ax.plot([], [], marker="v", linestyle="none", color="C3", label="wells")
    if barriers:
        ax.plot([], [], marker="o", linestyle="none", markerfacecolor="none", color="C1", label="barriers")
    ax.set_xlabel("ρ")
    ax.set_ylabel("potential / D")
    ax.legend(loc="best", fontsize=8)
    return ax


#: How each kind of traced line is drawn (a boundary job's ``lines[].kind``).
LINE_STYLES: dict[str, dict[str, Any]] = {
    "first_order": {"color": "crimson", "linestyle": "-", "linewidth": 1.8},
    "spinodal": {"color": "0.25", "linestyle": "--", "linewidth": 1.4},
    "stability_loss": {"color": "C0", "linestyle": "-.", "linewidth": 1.4},
    "event": {"color": "C2", "linestyle": ":", "linewidth": 1.4},
}


def _line_xy(line: dict[str, Any], p1: str, p2: str) -> tuple[list[float], list[float]]:
    """(p2 values, p1 values) of a line: [p1, p2] pairs (traced) or {p1: …, p2: …} records (a grid's rows)."""
    pts = line["points"]
    if pts and isinstance(pts[0], dict):
        return [q[p2] for q in pts], [q[p1] for q in pts]
    return [q[1] for q in pts], [q[0] for q in pts]


def phase_diagram(result: dict[str, Any], ax: Any = None, *, lines: bool = True, points: bool = True) -> Any:
    """A two-parameter result drawn in the (p2, p1) plane.

    For a grid phase diagram: the equilibrium branch at each grid point (``points``) and the
    transition lines joined row by row (marked ×, as located per row). For a boundary job: the
    traced lines, styled by kind (first-order, spinodal, stability loss, event), and its critical
    points (stars). Draw both on one ``ax`` to compare them.
    """
    names = parameter_names(result)
    if len(names) != 2:
        raise ValueError("phase_diagram() takes a two-parameter result")
    p1, p2 = names
    ax = _axes(ax)
    traced = result.get("method") == "boundary"
    if points and not traced:
        groups: dict[str, tuple[list[float], list[float]]] = {}
        for pt in result.get("points", []):
            key = pt.get("equilibrium") or "none"
            xs, ys = groups.setdefault(key, ([], []))
            xs.append(pt["parameter"][1])
            ys.append(pt["parameter"][0])
        for name, (xs, ys) in sorted(groups.items()):
            ax.scatter(xs, ys, s=12, label=f"equilibrium: {name}")
    if lines:
        labelled: set[str] = set()
        for line in result.get("lines", []):
            xs, ys = _line_xy(line, p1, p2)
            if traced:
                kind = line["kind"]
                label = None if kind in labelled else kind.replace("_", " ") + " (traced)"
                labelled.add(kind)
                ax.plot(xs, ys, label=label, **LINE_STYLES.get(kind, SPINODAL_STYLE))
            else:
                style = FIRST_ORDER_STYLE if line["kind"] == "first_order" else SPINODAL_STYLE
                ax.plot(xs, ys, marker="x", label=line.get("name", line["kind"]), **style)
        critical = result.get("critical_points", [])
        if critical:
            ax.plot([c["point"][1] for c in critical], [c["point"][0] for c in critical], marker="*", markersize=12,
                    linestyle="none", color="k", label="critical point")
    ax.set_xlabel(p2)
    ax.set_ylabel(p1)
    ax.legend(loc="best", fontsize=7)
    return ax


def _x_of(point: dict[str, Any], x: float | None) -> float:
    if x is not None:
        return float(x)
    if point.get("parameter") is None:
        raise ValueError("a single experiment has no parameter value; pass x= or run a learning curve")
    return float(point["parameter"])


def _component(value: Any, component: int | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, list):
        if component is None:
            raise ValueError("a vector observable: pass component=")
        value = value[component]
    return None if value is None else float(value)


def theory_vs_experiment(
    results: Any,
    observable: str = "generalization_error",
    ax: Any = None,
    *,
    branches: list[str] | None = None,
    component: int | None = None,
    sweep: dict[str, Any] | None = None,
    sweep_quantity: str | None = None,
    sigmas: float = 1.0,
    x: float | None = None,
    logx: bool = False,
) -> Any:
    """The theory's branches as lines and the experiment as points with error bars, along a learning curve or a
    sweep in any parameter (T, α, …).

    ``results``: an experiment result (a learning curve, or one experiment with ``x=``), or a mapping label ->
    result (e.g. two initialisations), each drawn as its own markers with ±``sigmas`` Monte-Carlo standard errors.
    The theory's lines are each branch's value at the experiments' parameter values (from each point's
    ``theory.comparison``), or, with ``sweep`` (a ``/v1/sweeps`` result in the same parameter), every branch of
    the sweep, stable solid and unstable dashed, for the quantity ``sweep_quantity`` (a dotted name, e.g.
    ``class_distance.D2``; default: ``observable``). An observable the experiment does not estimate, or a quantity
    the sweep does not report, raises :class:`~clients.names.UnknownQuantity`.
    """
    from clients.experiments import points_of

    runs = dict(results) if isinstance(results, dict) and "kind" not in results else {"experiment": results}
    estimated = sorted({n for r in runs.values() for pt in points_of(r) for n in (pt.get("observables") or {})})
    if observable not in estimated:
        raise UnknownQuantity(observable, estimated)
    if sweep is not None:
        check_scalar(sweep, sweep_quantity or observable)
    ax = _axes(ax)
    colors = _pyplot().rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    if sweep is not None:
        quantity = sweep_quantity or observable
        for k, name in enumerate(branch_names(sweep)):
            if branches is not None and name not in branches:
                continue
            xs, ys, st = [], [], []
            for pt in sweep["points"]:
                b = _converged_branch(pt, name)
                xs.append(pt["parameter"])
                v = value_of(b, quantity) if b is not None else None
                ys.append(float(v) if is_number(v) else None)
                st.append(b.get("stable") if b is not None else None)
            labelled = False
            for rx, ry, stable in _runs(xs, ys, st):
                ax.plot(rx, ry, color=colors[k % len(colors)], linestyle="-" if stable else "--", linewidth=1.3,
                        label=None if labelled else f"theory: {name}")
                labelled = True
    else:
        first = next(iter(runs.values()))
        lines: dict[str, tuple[list[float], list[float]]] = {}
        for pt in points_of(first):
            for name, rows in (pt.get("theory", {}).get("comparison") or {}).items():
                if branches is not None and name not in branches:
                    continue
                value = _component((rows.get(observable) or {}).get("theory"), component)
                xs, ys = lines.setdefault(name, ([], []))
                xs.append(_x_of(pt, x))
                ys.append(float("nan") if value is None else value)
        for k, (name, (xs, ys)) in enumerate(lines.items()):
            order = sorted(range(len(xs)), key=xs.__getitem__)
            ax.plot([xs[i] for i in order], [ys[i] for i in order], color=colors[k % len(colors)], linewidth=1.3,
                    label=f"theory: {name}")
    markers = ["o", "s", "^", "D", "v"]
    for k, (label, result) in enumerate(runs.items()):
        xs, ys, es = [], [], []
        for pt in points_of(result):
            est = (pt.get("observables") or {}).get(observable)
            if est is None:
                continue
            mean, err = _component(est["mean"], component), _component(est["stderr"], component)
            if mean is None:
                continue
            xs.append(_x_of(pt, x))
            ys.append(mean)
            es.append(sigmas * (err or 0.0))
        ax.errorbar(xs, ys, yerr=es, fmt=markers[k % len(markers)], color="k" if len(runs) == 1 else f"C{k + 3}",
                    markersize=5, capsize=3, linestyle="none", label=f"{label} (±{sigmas:g} s.e.)")
    ax.set_xscale("log" if logx else "linear")
    first = next(iter(runs.values()))
    ax.set_xlabel(first.get("parameter") or "parameter")
    ax.set_ylabel(observable if component is None else f"{observable}[{component}]")
    ax.legend(loc="best", fontsize=8)
    return ax


def _bin_means(x: list[float], y: list[float], edges: list[float]) -> tuple[list[float], list[float]]:
    centres, means = [], []
    for lo, hi in itertools.pairwise(edges):
        inside = [b for a, b in zip(x, y, strict=True) if lo <= a < hi]
        if inside:
            centres.append(0.5 * (lo + hi))
            means.append(sum(inside) / len(inside))
    return centres, means


def _alpha_of(point: dict[str, Any]) -> float | None:
    value = point.get("alpha", point.get("parameter"))
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def specialisation_map(
    theory_points: list[dict[str, Any]],
    experiment_points: list[dict[str, Any]] | None = None,
    *,
    layer: int = 1,
    bins: int = 8,
    xmax: float | None = 3.5,
    axes: Any = None,
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
    experiment_points = experiment_points or []
    rows = sorted(theory_points, key=lambda p: _alpha_of(p) or 0.0)
    if axes is None:
        _, axes = plt.subplots(len(rows), 2, figsize=(8, 2.2 * len(rows)), sharex=True, sharey=True, squeeze=False)
    for r, point in enumerate(rows):
        alpha = _alpha_of(point)
        op = point.get("order_parameters") or {}
        if "v2" not in op or "Q1" not in op:
            raise ValueError("theory points need order_parameters v2, Q1 and Q2 (two-hidden-layer hciz_mlp)")
        left, right = axes[r][0], axes[r][1]
        if layer == 1:
            left.plot(op["v2"], op["Q1"], marker="o", color="C0")
        else:
            for v, row in zip(op.get("v") or [1.0], op["Q2"], strict=True):
                left.plot(op["v2"], row, marker="o", label=f"|v| = {v:.3g}")
            if len(op["Q2"]) > 1:
                left.legend(fontsize=7, loc="best")
        left.set_ylabel(f"Q{layer}" + (f"  (α = {alpha:g})" if alpha is not None else ""))
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
    axes[-1][0].set_xlabel("|v₂| (effective readout)")
    axes[-1][1].set_xlabel("|v₂| (effective readout)")
    return axes
