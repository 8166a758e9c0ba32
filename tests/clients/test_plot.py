"""clients.plot draws what the results say, read back from the drawn artists: branches by stability, folds closed,
vertical first-order jumps at their refined values, transitions with their values clear of each other, U(ρ) on both
sides, phase regions named, the same names for grid and traced lines, the papers' symbols as labels."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from clients import plot, series
from clients.names import UnknownQuantity
from tests.clients.figure_data import compute_sweeps, load
from tests.clients.test_plot_images import symbols

U_FOLD, U_FIRST_ORDER, U_PITCHFORK = 28.322495311678107, 75 * math.pi / 8, math.pi * (1 + 2 * 0.5) / (4 * 0.5 * 0.3**2)


@pytest.fixture(autouse=True)
def _close() -> Iterator[None]:
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def served() -> dict[str, dict[str, Any]]:
    """The README's potential sweep and hciz_mlp's α sweep as a job assembles them now (computed in process)."""
    return compute_sweeps("potential_sweep", "hciz_sweep")


def caption(ax: Any) -> str:
    return next((t.get_text() for t in ax.texts if t.get_gid() == "caption"), "")


def lines(ax: Any, gid: str) -> list[Any]:
    return [ln for ln in ax.get_lines() if ln.get_gid() == gid]


def xy(line: Any) -> list[tuple[float, float]]:
    return list(zip(map(float, line.get_xdata()), map(float, line.get_ydata()), strict=True))


def vertical_jumps(line: Any) -> list[tuple[float, float, float]]:
    """(x, y before, y after) of every vertical step of a drawn line."""
    pts = xy(line)
    return [(x0, y0, y1) for (x0, y0), (x1, y1) in itertools.pairwise(pts) if x0 == x1 and y0 != y1]


# ---------------------------------------------------------------------------------------------
# the served sweeps (Done-when: folds closed, jumps vertical, mathtext labels)


def test_the_readme_potential_sweep_closes_its_fold_and_jumps_vertically_at_75pi_over_8(served: dict) -> None:
    result = served["potential_sweep"]
    ax = plot.branch_diagram(result, "rho", symbols=symbols("rubin_cavity"))
    aligned, barrier = lines(ax, "branch:aligned"), lines(ax, "branch:barrier")
    assert aligned and barrier
    # both branches reach the spinodal and meet there: the fold is a shared end point, the smallest u of both
    low_aligned = min(min(ln.get_xdata()) for ln in aligned)
    low_barrier = min(min(ln.get_xdata()) for ln in barrier)
    assert low_aligned == pytest.approx(U_FOLD, abs=1e-3) and low_barrier == pytest.approx(U_FOLD, abs=1e-3)
    ends = {xy(ln)[k] for ln in aligned for k in (0, -1)}
    starts = {xy(ln)[k] for ln in barrier for k in (0, -1)}
    shared = [(x, y) for x, y in ends if any(abs(x - a) < 1e-9 and abs(y - b) < 1e-9 for a, b in starts)]
    assert shared and shared[0][0] == pytest.approx(U_FOLD, abs=1e-9)
    # stable solid, unstable dashed: the barrier and the centre past its pitchfork
    assert {ln.get_linestyle() for ln in barrier} == {"--"}
    assert {ln.get_linestyle() for ln in aligned} == {"-"}
    center = {ln.get_linestyle(): min(ln.get_xdata()) for ln in lines(ax, "branch:center")}
    assert center["--"] == pytest.approx(U_PITCHFORK, abs=1e-9)
    # the equilibrium is one line with one vertical jump, at the first-order point, from ρ = 0 to the aligned well
    (eq,) = lines(ax, "equilibrium")
    (jump,) = vertical_jumps(eq)
    assert jump[0] == pytest.approx(U_FIRST_ORDER, abs=1e-9)
    assert jump[1] == 0.0 and jump[2] == pytest.approx(1 / math.sqrt(2), abs=1e-9)
    assert ax.get_xlabel() == "$u$" and ax.get_ylabel() == r"$\rho$"
    assert r"$\sigma_w^2$ = 0.5" in caption(ax) and "$b$ = 0.3" in caption(ax)


def test_the_hciz_alpha_sweep_closes_its_fold_and_jumps_at_its_first_order_point(served: dict) -> None:
    result = served["hciz_sweep"]
    spinodal, first_order = (next(t["parameter"] for t in result["transitions"] if t["kind"] == kind)
                             for kind in ("spinodal", "first_order"))
    assert spinodal == pytest.approx(3.4255, abs=1e-4) and first_order == pytest.approx(3.7315, abs=1e-4)
    ax = plot.branch_diagram(result, "generalization_error", symbols=symbols("hciz_mlp"))
    specialised, unstable = lines(ax, "branch:specialized"), lines(ax, "branch:weakly_specialized_unstable")
    assert min(min(ln.get_xdata()) for ln in specialised) == pytest.approx(spinodal, abs=1e-9)
    assert min(min(ln.get_xdata()) for ln in unstable) == pytest.approx(spinodal, abs=1e-9)
    assert {ln.get_linestyle() for ln in unstable} == {"--"}
    (eq,) = lines(ax, "equilibrium")
    (jump,) = vertical_jumps(eq)
    assert jump[0] == pytest.approx(first_order, abs=1e-12) and jump[2] < jump[1]  # the error drops at the jump
    assert ax.get_xlabel() == r"$\alpha$" and ax.get_ylabel() == r"$\varepsilon^*$"
    curve = plot.learning_curve(result, symbols=symbols("hciz_mlp"))
    assert curve.get_ylabel() == r"$\varepsilon^*$"
    assert [j[0] for j in vertical_jumps(lines(curve, "equilibrium")[0])] == [pytest.approx(first_order, abs=1e-12)]


def test_transition_values_are_written_once_each_and_overlap_nowhere(served: dict) -> None:
    _, ax = plt.subplots(layout="constrained")
    ax.set_title("a title")  # set before the values are written: it goes above them
    plot.branch_diagram(served["potential_sweep"], "rho", ax)
    texts = [t for t in ax.texts if t.get_gid() == "transition-label"]
    assert sorted(t.get_text() for t in texts) == ["28.3225", "29.4524", "34.9066"]
    renderer = ax.figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in texts]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b)
    # above the axes, clear of the data, and the title above them; the caption under the x label
    ax.figure.canvas.draw()
    boxes = [t.get_window_extent(renderer) for t in texts]
    top = ax.get_window_extent(renderer).y1
    assert all(b.y0 >= top for b in boxes)
    assert ax.title.get_window_extent(renderer).y0 >= max(b.y1 for b in boxes) - 1
    under = next(t for t in ax.texts if t.get_gid() == "caption").get_window_extent(renderer)
    assert under.y1 <= ax.xaxis.label.get_window_extent(renderer).y0


def test_the_default_learning_quantity_varies(served: dict) -> None:
    # the potential's test_mse = b² + 6c² is the same at every u: the curve shows the first quantity that varies
    ax = plot.learning_curve(served["potential_sweep"])
    assert ax.get_ylabel() == r"$\rho$"  # the result labels itself
    ys = [y for _, y in xy(lines(ax, "equilibrium")[0]) if not math.isnan(y)]
    assert min(ys) == 0.0 and max(ys) > 1.0


def test_an_unknown_quantity_raises_and_lists_the_names(served: dict) -> None:
    for draw in (plot.branch_diagram, plot.learning_curve):
        with pytest.raises(UnknownQuantity) as err:
            draw(served["potential_sweep"], "nonexistent_quantity")
        assert "rho_star" in str(err.value) and "test_mse" in str(err.value)
    with pytest.raises(UnknownQuantity, match="did you mean rho_star"):
        plot.branch_diagram(served["potential_sweep"], "star")


# ---------------------------------------------------------------------------------------------
# synthetic results: the rules, one at a time


def _branch(name: str, rho: float, stable: bool, mse: float | None = None) -> dict:
    obs = {"test_mse": mse} if mse is not None else {}
    return {"name": name, "converged": True, "stable": stable, "free_entropy": -rho, "order_parameters": {"rho": rho},
            "observables": obs}


def _grid_sweep() -> dict:
    # centre everywhere, stable until u = 3; an aligned branch from u = 2 on; first-order at 2.5. No curves.
    points = []
    for u in (1.0, 2.0, 3.0, 4.0):
        branches = [_branch("center", 0.0, u < 3, mse=1.0)]
        if u >= 2:
            branches.append(_branch("aligned", u / 10, True, mse=0.5))
        eq = "center" if u < 2.5 else "aligned"
        chosen = next(b for b in branches if b["name"] == eq)
        points.append({"parameter": u, "converged": True, "equilibrium": eq, "branches": branches,
                       "order_parameters": chosen["order_parameters"], "observables": chosen["observables"]})
    transitions = [
        {"kind": "spinodal", "type": "fold", "parameter": 1.5, "branches": ["aligned"]},
        {"kind": "first_order", "type": "first_order", "parameter": 2.5, "branches": ["aligned", "center"]},
        {"kind": "spinodal", "type": "bifurcation", "parameter": 2.9, "branches": ["center"]},
    ]
    return {"parameter": "u", "points": points, "transitions": transitions, "curves": None}


def test_a_grid_sweep_is_drawn_at_its_values_and_its_equilibrium_is_not_joined_across_a_jump() -> None:
    ax = plot.branch_diagram(_grid_sweep(), "rho")
    center = {ln.get_linestyle(): [x for x, _ in xy(ln)] for ln in lines(ax, "branch:center")}
    assert center == {"-": [1.0, 2.0], "--": [2.0, 3.0, 4.0]}
    assert [x for x, _ in xy(lines(ax, "branch:aligned")[0])] == [2.0, 3.0, 4.0]
    # without curves nothing is known between 2 and 3: the equilibrium path is interrupted there, not sloped
    (eq,) = lines(ax, "equilibrium")
    pts = xy(eq)
    assert pts[:2] == [(1.0, 0.0), (2.0, 0.0)] and math.isnan(pts[2][0]) and pts[3:] == [(3.0, 0.3), (4.0, 0.4)]
    assert sorted(float(ln.get_xdata()[0]) for ln in ax.get_lines() if str(ln.get_gid()).startswith("transition:")) \
        == [1.5, 2.5, 2.9]
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert {"center", "aligned", "unstable (dashed)", "equilibrium", "first order", "spinodal",
            "stability loss"} <= legend


def test_symbols_come_from_the_served_table_else_the_dotted_name() -> None:
    table = {"u": {"symbol": "$u$"}, "rho": {"symbol": r"$\rho$"}}
    ax = plot.branch_diagram(_grid_sweep(), "rho", symbols=table)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("$u$", r"$\rho$")
    # a result without a table of its own: the first order parameter that varies, by its dotted name
    assert plot.learning_curve(_grid_sweep()).get_ylabel() == "rho"
    # with one: its theory's headline, and every label from it; symbols= overrides an entry
    carried = {"test_mse": {"symbol": r"$\varepsilon_g$", "role": "headline"}, "u": {"symbol": "$u$"},
               "rho": {"symbol": "$r$"}}
    labelled = {**_grid_sweep(), "quantities": carried}
    assert plot.learning_curve(labelled).get_ylabel() == r"$\varepsilon_g$"
    ax = plot.branch_diagram(labelled, "rho")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("$u$", "$r$")
    assert plot.branch_diagram(labelled, "rho", symbols=table).get_ylabel() == r"$\rho$"

    asked: list[str | None] = []

    class Lab:  # a client: fetches the table of the result's theory
        def quantities(self, theory: str | None) -> dict:
            asked.append(theory)
            return table

    ax = plot.branch_diagram({**_grid_sweep(), "theory": "rubin_cavity"}, "rho", symbols=Lab())
    assert ax.get_xlabel() == "$u$" and asked == ["rubin_cavity"]


def test_the_caption_names_every_fixed_scalar_parameter_but_the_swept_one() -> None:
    model = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 20.0,
             "D": None, "potential_samples": 0, "data": {"seed": 1, "classes": [3, 8]}, "quench": False}
    ax = plot.branch_diagram({**_grid_sweep(), "model": model}, "rho", symbols={"sigma_w2": {"symbol": "$s$"}})
    assert caption(ax) == "cavity (Rubin et al.), potential: $s$ = 0.5, b = 0.3, c = −0.3, seed = 1"
    ax = plot.branch_diagram({**_grid_sweep(), "model": model}, "rho", caption=["b", "data.seed"])
    assert caption(ax) == "cavity (Rubin et al.), potential: sigma_w2 = 0.5, c = −0.3"
    assert caption(plot.branch_diagram({**_grid_sweep(), "model": model}, "rho", caption=False)) == ""


def _potential_point(curve: bool = True) -> dict:
    obs: dict[str, Any] = {
        "potential_wells": [{"rho": 0.0, "f_minus_f0": 0.0, "kind": "center"},
                            {"rho": 0.8, "f_minus_f0": -0.1, "kind": "aligned", "weight": 0.7}],
        "barriers": [{"rho": 0.4, "f_minus_f0": 0.05}]}
    if curve:
        obs["potential_curve"] = {"rho": [-1.0, -0.8, -0.4, 0.0, 0.4, 0.8, 1.0],
                                  "value": [0.2, -0.1, 0.05, 0.0, 0.05, -0.1, 0.2]}
    return {"theory": "rubin_cavity", "observables": obs}


def test_the_potential_is_the_served_curve_with_wells_and_barriers_at_both_signs() -> None:
    ax = plot.potential(_potential_point())
    (curve,) = lines(ax, "potential")
    assert xy(curve)[0] == (-1.0, 0.2) and xy(curve)[-1] == (1.0, 0.2)
    wells = sorted(p for ln in lines(ax, "well") for p in xy(ln))
    assert wells == [(-0.8, -0.1), (0.0, 0.0), (0.8, -0.1)]
    assert sorted(p for ln in lines(ax, "barrier") for p in xy(ln)) == [(-0.4, 0.05), (0.4, 0.05)]
    assert any("weight 0.7" in t.get_text() for t in ax.texts)
    assert not any("quadratic" in str(ln.get_label()) for ln in ax.get_lines())
    with pytest.raises(ValueError, match="potential_samples"):
        plot.potential(_potential_point(curve=False))


def test_phase_regions_are_named_and_grid_and_traced_lines_share_their_names() -> None:
    def point(b: float, u: float) -> dict:
        eq = "center" if u < 2 else "aligned"
        return {"parameter": [b, u], "equilibrium": eq, "branches": [],
                "observables": {"phase": "GFL" if eq == "center" else "GMFL-II"}}

    grid = {
        "parameters": ["b", "u"], "method": "grid",
        "points": [point(b, u) for b in (0.2, 0.25, 0.3) for u in (1.0, 1.5, 2.5, 3.0)],
        "transitions": [{"kind": "spinodal", "type": "bifurcation", "parameter": 2.6, "branches": ["center"]}],
        "lines": [{"name": "spinodal:center", "kind": "spinodal", "points": [{"b": 0.2, "u": 2.7},
                                                                             {"b": 0.3, "u": 2.5}]}],
    }
    traced = {"parameters": ["b", "u"], "method": "boundary", "critical_points": [],
              "lines": [{"kind": "stability_loss", "type": "stability_loss", "branches": ["center", "barrier"],
                         "points": [[0.2, 2.7], [0.3, 2.5]]}]}
    ax = plot.phase_diagram(grid)
    plot.phase_diagram(traced, ax)
    assert sorted(t.get_text() for t in ax.texts if t.get_gid() == "region-name") == ["GFL", "GMFL-II"]
    gfl = next(t for t in ax.texts if t.get_text() == "GFL")
    assert gfl.get_position()[0] < 2  # inside its region
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "stability loss, per row" in legend and "stability loss (barrier/center), traced" in legend
    (row,) = lines(ax, "line:spinodal")
    assert row.get_linestyle() == "None" and xy(row) == [(2.7, 0.2), (2.5, 0.3)]
    with pytest.raises(ValueError):
        plot.branch_diagram(grid)


def test_paper_style_has_journal_widths_and_saves_vector_files(tmp_path: Any) -> None:
    with plot.paper_style():
        fig, ax = plot.figure("single")
        assert fig.get_figwidth() == 3.4 and plt.rcParams["pdf.fonttype"] == 42
        plot.branch_diagram(_grid_sweep(), "rho", ax)
        plot.save(fig, str(tmp_path / "f.pdf"))
        plot.save(fig, str(tmp_path / "f.svg"))
    assert (tmp_path / "f.pdf").read_bytes().startswith(b"%PDF")
    assert b"<svg" in (tmp_path / "f.svg").read_bytes()[:400]
    assert plot.figure("double")[0].get_figwidth() == 7.0


def _two_layer_point(alpha: float, q1: list[float], q2: list[list[float]]) -> dict:
    return {"parameter": alpha, "order_parameters": {"v2": [0.5, 1.5, 2.5], "Q1": q1, "v": [0.45, 1.34][: len(q2)],
                                                     "Q2": q2}}


def test_specialisation_map_draws_theory_beside_binned_experiment() -> None:
    theory = [_two_layer_point(4.0, [0.1, 0.6, 0.9], [[0.0, 0.2, 0.4]]),
              _two_layer_point(2.0, [0.0, 0.0, 0.3], [[0.0, 0.0, 0.1]])]
    experiment = [{"alpha": 4.0, "v2": [0.2, 0.25, 1.2, 2.4], "Q1": [0.0, 0.2, 0.5, 1.0], "Q2": [0, 0, 0.1, 0.3]}]
    axes = plot.specialisation_map(theory, experiment)
    assert axes.shape == (2, 2)
    # rows ordered by α; the theory curve is drawn at the atoms
    top_left = axes[0][0].get_lines()[0]
    assert list(top_left.get_ydata()) == [0.0, 0.0, 0.3]
    # the α = 4 experiment: neurons as dots, and bin means over |v2| (8 bins on [0, 2.4])
    dots, means = axes[1][1].get_lines()[:2]
    assert list(dots.get_ydata()) == [0.0, 0.2, 0.5, 1.0]
    assert list(means.get_ydata()) == pytest.approx([0.1, 0.5, 1.0])
    assert axes[0][1].texts and axes[0][1].texts[0].get_text() == "no experiment"


def test_specialisation_map_second_layer_has_one_curve_per_readout_value() -> None:
    axes = plot.specialisation_map([_two_layer_point(4.0, [0, 0, 0], [[0.0, 0.1, 0.2], [0.1, 0.5, 0.9]])], layer=2)
    assert len(axes[0][0].get_lines()) == 2
    with pytest.raises(ValueError, match="v2"):
        plot.specialisation_map([{"parameter": 1.0, "order_parameters": {"Q": 0.3}}])


def test_one_solution_renamed_along_its_curve_is_drawn_unbroken() -> None:
    """Plain MF at finite P has one solution at every κ, which the theory names by its state (aligned while
    m_S ≥ ½): the points' equilibrium changes name at no transition, while the traced curve carries one name. The
    equilibrium path passes through every requested value without a break, and through nothing else than the
    curve and those values."""
    from service.jobs.in_process import run_job

    model = {"theory": "mean_field_ard", "model": "mf", "activation": "relu", "d": 20, "N": 256, "kappa": 0.05,
             "P": 400, "target": {"kind": "parity", "k": 2}, "data": {"seed": 0, "P_test": 1000}}
    result = run_job({"model": model, "parameter": "kappa", "values": {"start": 0.02, "stop": 0.07, "num": 11}})
    names = [pt["equilibrium"] for pt in sorted(result["points"], key=lambda p: p["parameter"])]
    assert names[0] == "aligned" and names[-1] == "symmetric"  # the situation this test is about
    ax = plot.learning_curve(result, "m_S", transitions=False)
    (eq,) = lines(ax, "equilibrium")
    pts = xy(eq)
    assert not any(math.isnan(x) for x, _ in pts)
    drawn = dict(pts)
    kappa, m_S = series(result, "m_S")
    assert [drawn[k] for k in kappa] == pytest.approx(m_S, abs=1e-12)


def test_a_boundary_job_alone_names_each_phase_on_its_side_of_the_lines() -> None:
    """The stored boundary job of the potential: each phase is named once, at one of its own probes (so on the side
    of the first-order line where that phase is the equilibrium), and the plot spans the whole box searched."""
    traced = load("phase_boundary")
    ax = plot.phase_diagram(traced)
    names = {t.get_text(): t.get_position() for t in ax.texts if t.get_gid() == "region-name"}
    assert sorted(names) == ["GFL", "GMFL-II"]
    for name, (u, b) in names.items():
        assert any(p["phase"] == name and p["point"] == [b, u] for p in traced["regions"])
    assert ax.get_xlim() == pytest.approx((10.0 - 2.5, 60.0 + 2.5)) and ax.get_ylim() == pytest.approx((0.2425, 0.4075))
    # over a grid diagram of the same box each name is written once
    ax = plot.phase_diagram(load("phase_grid"))
    plot.phase_diagram(traced, ax)
    assert sorted(t.get_text() for t in ax.texts if t.get_gid() == "region-name") == ["GFL", "GMFL-II"]
