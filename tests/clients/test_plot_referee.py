"""What a referee checks in a figure, read back from the drawn artists: legends that name each branch in words once
and sit inside the axes or below them (never squeezing them), every traced branch drawn (metastable thinner,
unstable dashed), smooth curves through folds, transition lines in their curve's colour with values that do not
overlap, tick and well labels that do not collide, panel letters, unconverged experiment points hollow and named,
an engine event named by what it is, and no font-date warnings on save."""

from __future__ import annotations

import itertools
import json
import logging
import math
from collections.abc import Iterator
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from clients import plot, series
from service.jobs.in_process import run_job
from tests.clients.figure_data import load
from tests.clients.test_plot_images import symbols


@pytest.fixture(autouse=True)
def _close() -> Iterator[None]:
    yield
    plt.close("all")


def _draw(fig: Any) -> Any:
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def legend_texts(ax: Any) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def branch_lines(ax: Any) -> list[Any]:
    return [ln for ln in ax.get_lines() if str(ln.get_gid()).startswith("branch:")]


def _sweep(transitions: list[dict[str, Any]], start: float, stop: float, slope: float = 1.0,
           step_at: float | None = None) -> dict[str, Any]:
    """A one-branch grid sweep of an order parameter ``q`` with the given transitions (``step_at``: q jumps by 10
    there)."""
    points = []
    for k in range(11):
        x = start + (stop - start) * k / 10
        op = {"q": slope * x + (10.0 if step_at is not None and x > step_at else 0.0)}
        points.append({"parameter": x, "converged": True, "equilibrium": "one",
                       "branches": [{"name": "one", "converged": True, "stable": True, "order_parameters": op,
                                     "observables": {}}], "order_parameters": op, "observables": {}})
    return {"parameter": "alpha", "points": points, "transitions": transitions, "curves": None}


# ---------------------------------------------------------------------------------------------
# legends: words, one entry per meaning, inside the axes or below them


def test_branch_legends_name_each_branch_in_words_once() -> None:
    # the hciz sweep's branches are universal, specialized and weakly_specialized_unstable
    ax = plot.branch_diagram(load("hciz_sweep"), "generalization_error", symbols=symbols("hciz_mlp"))
    texts = legend_texts(ax)
    assert "weakly specialized" in texts
    assert not any("_" in t for t in texts), texts
    assert len(texts) == len(set(texts))
    assert sum("unstable" in t for t in texts) == 1, texts  # the dashed style, said once


def test_a_branch_named_unstable_is_not_said_twice() -> None:
    sweep = json.loads(json.dumps(load("hciz_sweep")).replace("weakly_specialized_unstable", "unstable"))
    ax = plot.branch_diagram(sweep, "generalization_error")
    assert sum("unstable" in t for t in legend_texts(ax)) == 1, legend_texts(ax)


def test_a_long_legend_goes_below_the_axes_which_keep_their_width() -> None:
    ax = plot.phase_diagram(load("phase_grid"), symbols=symbols("rubin_cavity"))
    plot.phase_diagram(load("phase_boundary"), ax, symbols=symbols("rubin_cavity"), caption=False)
    fig = ax.figure
    renderer = _draw(fig)
    legend = ax.get_legend().get_window_extent(renderer)
    frame = ax.get_window_extent(renderer)
    caption = next(t for t in ax.texts if t.get_gid() == "caption").get_window_extent(renderer)
    assert frame.x0 - 1 <= legend.x0 and legend.x1 <= frame.x1 + 1  # within the axes' width …
    assert legend.y1 <= caption.y0 + 1  # … under the caption
    assert frame.width >= 0.8 * fig.bbox.width  # the axes were not squeezed sideways


def test_a_figure_of_its_own_grows_to_hold_a_legend_below_its_axes() -> None:
    ax = plot.theory_vs_experiment({"from the prior": _experiment(bad_alpha=3.0), "from the teacher": _experiment()},
                                   "generalization_error", sweep=load("hciz_sweep"), sigmas=2,
                                   symbols=symbols("hciz_mlp"))
    renderer = _draw(ax.figure)
    frame = ax.get_window_extent(renderer)
    assert frame.height / ax.figure.dpi >= 2.6  # of the 4.4 in a plot's own figure starts with


def test_an_experiment_legend_sits_inside_or_below_the_axes() -> None:
    ax = plot.theory_vs_experiment({"from the prior": _experiment(), "from the teacher": _experiment()},
                                   "generalization_error", sweep=load("hciz_sweep"), sigmas=2,
                                   symbols=symbols("hciz_mlp"))
    renderer = _draw(ax.figure)
    legend, frame = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
    assert frame.x0 - 1 <= legend.x0 and legend.x1 <= frame.x1 + 1
    assert frame.width >= 0.8 * ax.figure.bbox.width


# ---------------------------------------------------------------------------------------------
# every traced branch, metastable thinner, unstable dashed; smooth through folds


def test_a_learning_curve_draws_every_traced_branch_beside_the_equilibrium() -> None:
    ax = plot.learning_curve(load("hciz_sweep"), symbols=symbols("hciz_mlp"))
    (eq,) = [ln for ln in ax.get_lines() if ln.get_gid() == "equilibrium"]
    others = branch_lines(ax)
    styles = {(ln.get_linestyle(), ln.get_linewidth() < eq.get_linewidth()) for ln in others}
    assert ("--", False) in styles  # the unstable branch from the spinodal, dashed
    assert ("-", True) in styles  # metastable stretches, thinner
    assert all(ln.get_color() == eq.get_color() for ln in others)
    # the universal branch goes on past the first-order point at α = 3.7315, metastable
    universal = [ln for ln in others if ln.get_gid() == "branch:universal"]
    assert max(max(ln.get_xdata()) for ln in universal) > 6.9
    assert {"unstable (dashed)", "metastable (thin)"} <= set(legend_texts(ax))


def test_metastable_stretches_are_thinner_than_the_equilibrium_stretch_of_the_same_branch() -> None:
    ax = plot.branch_diagram(load("potential_sweep"), "rho", symbols=symbols("rubin_cavity"))
    aligned = [ln for ln in branch_lines(ax) if ln.get_gid() == "branch:aligned"]
    u_first_order = 75 * math.pi / 8
    before = [ln for ln in aligned if max(ln.get_xdata()) <= u_first_order + 1e-6]
    after = [ln for ln in aligned if min(ln.get_xdata()) >= u_first_order - 1e-6]
    assert before and after
    assert max(ln.get_linewidth() for ln in before) < min(ln.get_linewidth() for ln in after)
    # the cut is at the first-order point itself
    assert max(max(ln.get_xdata()) for ln in before) == pytest.approx(u_first_order, abs=1e-9)


def _turning_degrees(ax: Any, line: Any) -> list[float]:
    pts = ax.transData.transform(list(zip(line.get_xdata(), line.get_ydata(), strict=True)))
    out = []
    for a, b, c in zip(pts, pts[1:], pts[2:], strict=False):
        u, v = b - a, c - b
        nu, nv = math.hypot(*u), math.hypot(*v)
        if nu > 1e-9 and nv > 1e-9:
            out.append(math.degrees(math.acos(max(-1.0, min(1.0, (u @ v) / (nu * nv))))))
    return out


def test_branches_pass_the_fold_without_a_corner() -> None:
    ax = plot.branch_diagram(load("potential_sweep"), "rho", symbols=symbols("rubin_cavity"))
    _draw(ax.figure)
    u_fold = 28.322495311678107
    near = [ln for ln in branch_lines(ax) if ln.get_gid() in ("branch:aligned", "branch:barrier")
            and min(ln.get_xdata()) < u_fold + 0.5]
    assert near
    # as drawn (pixels), no two consecutive segments of a branch near its fold turn by more than a few degrees
    worst = max(max(_turning_degrees(ax, ln), default=0.0) for ln in near)
    assert worst < 8.0, worst


# ---------------------------------------------------------------------------------------------
# transitions of several curves; labels that do not collide


def test_transitions_of_several_curves_take_each_curve_colour_and_their_values_do_not_overlap() -> None:
    fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
    for k, (value, span) in enumerate(((4.97656, (3.0, 8.0)), (5.0839, (4.5, 12.0)))):
        sweep = _sweep([{"kind": "first_order", "type": "first_order", "parameter": value, "branches": ["one"]}],
                       *span)
        plot.learning_curve(sweep, "q", ax, caption=False, label=f"L = {k + 2}", color=f"C{k}")
    renderer = _draw(fig)
    vlines = [ln for ln in ax.get_lines() if str(ln.get_gid()).startswith("transition:") and len(ln.get_xdata())]
    assert sorted(matplotlib.colors.to_hex(ln.get_color()) for ln in vlines) == \
        sorted(matplotlib.colors.to_hex(c) for c in ("C0", "C1"))
    values = [t for t in ax.texts if t.get_gid() == "transition-label"]
    assert sorted(t.get_text() for t in values) == ["4.97656", "5.0839"]
    a, b = (t.get_window_extent(renderer) for t in values)
    assert not a.overlaps(b)
    assert legend_texts(ax).count("first order") == 1


def _tick_collisions(ax: Any, renderer: Any) -> list[tuple[str, str]]:
    bad = []
    for axis in (ax.xaxis, ax.yaxis):
        lo, hi = sorted(axis.get_view_interval())
        shown = [t for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]
                 if lo <= tick.get_loc() <= hi for t in (tick.label1,) if t.get_visible() and t.get_text()]
        for p, q in itertools.combinations(shown, 2):
            if p.get_window_extent(renderer).overlaps(q.get_window_extent(renderer)):
                bad.append((p.get_text(), q.get_text()))
    return bad


@pytest.mark.parametrize("width", [3.4, 5.0, 6.4])
def test_log_axis_tick_labels_do_not_collide(width: float) -> None:
    fig, ax = plt.subplots(figsize=(width, 3.0), layout="constrained")
    plot.learning_curve(_sweep([], 50.0, 800.0, slope=1e-3), "q", ax, logx=True, caption=False)
    renderer = _draw(fig)
    assert _tick_collisions(ax, renderer) == []
    assert [t.get_text() for t in ax.xaxis.get_ticklabels(which="both") if t.get_text()]  # still labelled


def test_well_names_stay_inside_the_axes_clear_of_the_tick_labels() -> None:
    with plot.paper_style():
        fig, ax = plot.figure("single")
        plot.potential(load("potential_solve"), ax, symbols=symbols("rubin_cavity"))
        renderer = _draw(fig)
    names = [t.get_window_extent(renderer) for t in ax.texts if t.get_gid() == "well-name"]
    assert names
    frame = ax.get_window_extent(renderer)
    ticks = [t.get_window_extent(renderer) for t in ax.xaxis.get_ticklabels() if t.get_text()]
    for box in names:
        assert box.y0 >= frame.y0 - 0.5
        assert not any(box.overlaps(t) for t in ticks)


# ---------------------------------------------------------------------------------------------
# panel letters; unconverged points; events by name; quiet saves


def test_panel_letters_read_a_b_c_d_in_rows() -> None:
    _, axes = plt.subplots(2, 2)
    plot.panel_letters(axes)
    assert [ax.get_title(loc="left") for ax in axes.flat] == ["(a)", "(b)", "(c)", "(d)"]


def test_a_specialisation_map_has_panel_letters() -> None:
    op = {"v2": [0.1, 0.6], "Q1": [0.0, 0.4], "v": [1.0], "Q2": [[0.0, 0.2]]}
    axes = plot.specialisation_map([{"alpha": 2.0, "order_parameters": op}])
    assert [ax.get_title(loc="left") for ax in axes.flat] == ["(a)", "(b)"]


def _estimate(mean: float, rhat: float, ess: float) -> dict[str, float]:
    return {"mean": mean, "stderr": 1e-4, "ess": ess, "ess_tail": ess, "rhat": rhat}


def _experiment(bad_alpha: float | None = None) -> dict[str, Any]:
    """An hciz_mlp learning curve of the network at α = 2, 3, 5; at ``bad_alpha`` its chains did not mix."""
    points = []
    for alpha in (2.0, 3.0, 5.0):
        bad = alpha == bad_alpha
        est = _estimate(0.03 - 0.003 * alpha, 1.09 if bad else 1.002, 16.0 if bad else 900.0)
        points.append({"parameter": alpha, "converged": not bad, "observables": {"generalization_error": est},
                       "theory": {"comparison": {}}})
    return {"kind": "experiment", "parameter": "alpha", "points": points,
            "request": {"model": {"theory": "hciz_mlp", "gamma": 0.5, "Delta": 0.1}}}


def test_unconverged_experiment_points_are_hollow_and_named_in_the_caption() -> None:
    ax = plot.theory_vs_experiment(_experiment(bad_alpha=3.0), "generalization_error", sweep=load("hciz_sweep"),
                                   symbols=symbols("hciz_mlp"))
    # the markers' line of each errorbar (its caps share its gid)
    drawn = {ln.get_gid(): ln for ln in ax.get_lines()
             if str(ln.get_gid()).startswith("experiment:") and ln.get_marker() != "_"}
    hollow = drawn["experiment:experiment:unconverged"]
    filled = drawn["experiment:experiment"]
    assert list(hollow.get_xdata()) == [3.0] and hollow.get_markerfacecolor() == "none"
    assert list(filled.get_xdata()) == [2.0, 5.0] and filled.get_markerfacecolor() != "none"
    caption = " ".join(next(t.get_text() for t in ax.texts if t.get_gid() == "caption").split())
    assert "not converged" in caption and "experiment at $\\alpha$ = 3 (R-hat 1.090, ESS 16)" in caption
    assert "not converged (hollow)" in legend_texts(ax)


def test_converged_points_are_all_filled() -> None:
    ax = plot.theory_vs_experiment(_experiment(), "generalization_error", sweep=load("hciz_sweep"))
    assert not [ln for ln in ax.get_lines() if str(ln.get_gid()).endswith(":unconverged")]
    assert "not converged" not in next(t.get_text() for t in ax.texts if t.get_gid() == "caption")


def test_an_engine_event_keeps_its_kind_where_the_quantity_jumps_and_is_an_onset_where_it_does_not() -> None:
    onset = {"kind": "first_order", "type": "first_order", "event": "aligned_onset", "parameter": 0.55,
             "branches": ["one"]}
    ax = plot.learning_curve(_sweep([onset], 0.0, 1.0, step_at=0.55), "q", caption=False)
    assert "first order (aligned onset)" in legend_texts(ax)
    ax = plot.learning_curve(_sweep([onset], 0.0, 1.0), "q", caption=False)
    assert "aligned onset (continuous)" in legend_texts(ax)


def test_the_rubin_t_sweep_names_its_jump_of_rho_star_first_order_and_the_bend_of_b_an_onset() -> None:
    """Along the self-consistent T sweep (one solution) the deepest well's position ρ* jumps from 0.72 to 0 at
    T_c = 0.17872, while b only bends there: the same transition is a first-order point of ρ* and a continuous
    onset of b."""
    sweep = json.loads(json.dumps(run_job({"model": {"theory": "rubin_cavity", "mode": "self_consistent"},
                                           "parameter": "T", "values": {"start": 0.15, "stop": 0.22, "num": 15}})))
    assert "first order (aligned onset)" in legend_texts(plot.learning_curve(sweep, "rho_star"))
    assert "aligned onset (continuous)" in legend_texts(plot.learning_curve(sweep, "b"))


def test_plain_mean_field_alignment_onset_is_continuous_and_drawn_as_an_onset() -> None:
    """Plain MF's alignment onset (filed as kind first_order) is where an aligned well of the unaligned state's
    potential reaches the central well's depth; the full solution's m_S passes it smoothly at finite d. Checked on
    the served κ sweep at the notebook's setting (k = 2, d = 35, N = 512): around the onset m_S has no jump (each
    step within 5 % of the step its neighbours' slope predicts) and its slope no kink; the figure names it an
    alignment onset, not a first-order point."""
    model = {"theory": "mean_field_ard", "model": "mf", "activation": "relu", "d": 35, "N": 512, "kappa": 0.05,
             "target": {"kind": "parity", "k": 2}}
    sweep = json.loads(json.dumps(run_job({"model": model, "parameter": "kappa",
                                           "values": {"start": 0.0055, "stop": 0.0062, "num": 21}})))
    (onset,) = [t for t in sweep["transitions"] if t.get("event") == "alignment_onset"]
    assert onset["kind"] == "first_order" and onset["parameter"] == pytest.approx(0.00585, rel=0.01)
    kappa, m_s = series(sweep, "m_S")
    slopes = [(b - a) / (y - x) for (x, a), (y, b) in itertools.pairwise(zip(kappa, m_s, strict=True))]
    k = next(i for i, x in enumerate(kappa) if x > onset["parameter"]) - 1  # the step across the onset
    predicted = 0.5 * (slopes[k - 1] + slopes[k + 1])
    assert slopes[k] == pytest.approx(predicted, rel=0.05)  # no jump: the step across is an ordinary step
    assert abs(slopes[k + 1] - slopes[k - 1]) < 0.1 * abs(predicted)  # no kink either
    ax = plot.branch_diagram(sweep, "m_S", caption=False)
    texts = legend_texts(ax)
    assert "alignment onset (continuous)" in texts and not any(t.startswith("first order") for t in texts)
    marks = [ln for ln in ax.get_lines() if str(ln.get_gid()).startswith("special:")]
    assert marks and all(ln.get_marker() == "^" for ln in marks)


def test_saving_a_paper_figure_warns_of_no_font_dates(tmp_path: Any, caplog: Any) -> None:
    with caplog.at_level(logging.WARNING), plot.paper_style():
        fig, ax = plot.figure("single")
        ax.plot([0, 1], [0, 1])
        ax.set_xlabel(r"$\sigma_w^2$")
        plot.save(fig, str(tmp_path / "figure.pdf"))
    assert (tmp_path / "figure.pdf").stat().st_size > 0
    assert "timestamp" not in caplog.text


def test_panel_letters_stand_above_the_transition_values() -> None:
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), layout="constrained")
    for ax in axes:
        plot.branch_diagram(load("potential_sweep"), "rho", ax, caption=False)
    plot.panel_letters(axes)
    renderer = _draw(fig)
    for ax in axes:
        letter = ax._left_title  # the panel letter (matplotlib keeps the left title there)
        box = letter.get_window_extent(renderer)
        values = [t.get_window_extent(renderer) for t in ax.texts if t.get_gid() == "transition-label"]
        assert values and not any(box.overlaps(v) for v in values)


def test_unconverged_points_of_a_second_result_on_the_axes_are_named_in_the_caption_too() -> None:
    ax = plot.theory_vs_experiment({"d = 12": _experiment(bad_alpha=3.0)}, "generalization_error",
                                   sweep=load("hciz_sweep"), color="C0")
    plot.theory_vs_experiment({"d = 20": _experiment(bad_alpha=5.0)}, "generalization_error", ax,
                              sweep=load("hciz_sweep"), color="C1", caption=False)
    caption = " ".join(next(t.get_text() for t in ax.texts if t.get_gid() == "caption").split())
    assert "d = 12 at alpha = 3" in caption and "d = 20 at alpha = 5" in caption
    assert legend_texts(ax).count("not converged (hollow)") == 1


def test_a_caption_writes_chosen_settings_in_words_not_identifiers() -> None:
    model = {"theory": "hciz_mlp", "depth": 2, "gamma": 1.0, "weight_prior": "gaussian",
             "activation": {"name": "tanh2", "remove_linear": True, "unit_variance": True},
             "scaling": "mean_field", "treatment": "tree_level", "target": {"kind": "parity", "k": 2}}
    ax = plot.branch_diagram({**_sweep([], 1.0, 2.0), "model": model}, "q")
    text = next(t.get_text() for t in ax.texts if t.get_gid() == "caption")
    for shown in ("activation = tanh2", "weight prior = gaussian", "scaling = mean field", "treatment = tree level",
                  "target = parity"):
        assert shown in " ".join(text.split()), text
    settings = text.split(": ", 1)[1]  # after the theory's name
    assert "_" not in settings and ".kind" not in settings  # no identifier left


def test_an_equilibrium_that_ends_at_its_stability_loss_is_not_thinned_before_it() -> None:
    """Past u = 34.9066 the centre is unstable and no other branch was traced (a diagram of depth 0): the centre is
    the equilibrium up to its stability loss, drawn at full width to there, and nothing is metastable."""
    sweep = json.loads(json.dumps(load("potential_sweep")))
    for curve in sweep["curves"]:
        keep = [i for i, b in enumerate(curve["branch"]) if b == "center"]
        for key, column in list(curve.items()):
            if isinstance(column, list) and len(column) == len(curve["branch"]):
                curve[key] = [column[i] for i in keep]
        for group in ("order_parameters", "observables"):
            for key, column in (curve.get(group) or {}).items():
                curve[group][key] = [column[i] for i in keep]
        curve["special"] = []
    sweep["curves"] = [c for c in sweep["curves"] if c["branch"]]
    for pt in sweep["points"]:
        pt["branches"] = [b for b in pt["branches"] if b["name"] == "center"]
        pt["equilibrium"] = "center" if pt["branches"] and pt["branches"][0]["stable"] else None
    sweep["transitions"] = [{**t, "branches": ["center"]} for t in sweep["transitions"]
                            if t["kind"] != "first_order" and "center" in t["branches"]]
    assert [round(t["parameter"], 4) for t in sweep["transitions"]] == [34.9066]
    ax = plot.branch_diagram(sweep, "rho")
    assert "metastable (thin)" not in legend_texts(ax)
    solid = [ln for ln in branch_lines(ax) if ln.get_linestyle() == "-"]
    assert max(max(ln.get_xdata()) for ln in solid) == pytest.approx(34.9066, abs=1e-3)


def _caption_of(model: dict[str, Any], theory: str | None = None) -> str:
    result = {**_sweep([], 1.0, 2.0), "model": model}
    ax = plot.branch_diagram(result, "q", symbols=symbols(theory) if theory else None)
    return " ".join(next(t.get_text() for t in ax.texts if t.get_gid() == "caption").split())


@pytest.mark.parametrize(("theory", "mode", "words"), [
    ("hciz_mlp", None, "HCIZ MLP: "), ("kernel_renormalization", None, "kernel renormalization: "),
    ("matrix_denoising", None, "matrix denoising: "), ("mean_field_ard", None, "mean-field ARD: "),
    ("rubin_cavity", "self_consistent", "cavity (Rubin et al.), self-consistent: "),
    ("rubin_cavity", "finite_sample", "cavity (Rubin et al.), finite sample: ")])
def test_a_caption_opens_with_the_theory_and_mode_in_words(theory: str, mode: str | None, words: str) -> None:
    model = {"theory": theory, **({"mode": mode} if mode else {}), "T": 0.1}
    text = _caption_of(model)
    assert text.startswith(words), text
    assert theory not in text and "_" not in text


def test_the_readout_prior_symbol_has_an_upright_subscript_in_the_caption() -> None:
    # an italic subscript a renders as a blot ("s•²") at the caption's size on screen; an upright one stays a letter
    text = _caption_of({"theory": "rubin_cavity", "mode": "self_consistent", "s_a2": 0.01}, "rubin_cavity")
    assert r"$s_{\mathrm{a}}^2$ = 0.01" in text, text


def test_a_nested_number_is_written_by_its_leaf_symbol_or_in_words_never_by_a_dotted_name() -> None:
    model = {"theory": "mean_field_ard", "model": "mf", "d": 20, "kappa": 0.05,
             "data": {"seed": 0, "P": 400, "P_test": 1000}}
    text = _caption_of(model, "mean_field_ard")
    assert "data." not in text, text
    for shown in ("$P$ = 400", r"$P_{\mathrm{test}}$ = 1000", "seed = 0"):
        assert shown in text, text
