"""The showcase figures compared with reference images (``tests/clients/reference/``), so that a regression in a figure
fails here.

Each figure is drawn from a stored result (``tests/clients/data/``, as the API serves it) with the theory's quantity
table, at a fixed size and resolution, with matplotlib's test settings (DejaVu Sans, no hinting, the default
style), and compared by :func:`matplotlib.testing.compare.compare_images`: the RMS of the pixel differences (0–255)
must stay below :data:`TOLERANCE` = 2, room for text rendered slightly differently by another matplotlib or FreeType
version. Measured on the potential sweep's figure, a regression is far above it: without the equilibrium path the
RMS is 11.9, without the barrier branch 14.3, without the transitions' lines, marks and values 31.0 (the last test
checks two of them). After an intended change, redraw the references and look at them:

    SADDLELAB_REDRAW_REFERENCES=1 .venv/bin/python -m pytest tests/clients/test_plot_images.py
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from matplotlib.testing import set_font_settings_for_testing, set_reproducibility_for_testing
from matplotlib.testing.compare import compare_images

from clients import plot
from solvers.theories import get
from tests.clients.figure_data import load

REFERENCE = Path(__file__).resolve().parent / "reference"
#: RMS of the pixel differences (0–255) a figure may differ from its reference by.
TOLERANCE = 2.0
REDRAW = os.environ.get("SADDLELAB_REDRAW_REFERENCES") == "1"


def symbols(theory: str) -> dict[str, Any]:
    """The theory's quantity table as ``GET /v1/theories`` serves it."""
    return {q.name: q.to_json() for q in get(theory).quantities}


def _branches_potential() -> Any:
    return plot.branch_diagram(load("potential_sweep"), "rho", symbols=symbols("rubin_cavity")).figure


def _branches_hciz() -> Any:
    return plot.branch_diagram(load("hciz_sweep"), "generalization_error", symbols=symbols("hciz_mlp")).figure


def _learning_hciz() -> Any:
    return plot.learning_curve(load("hciz_sweep"), symbols=symbols("hciz_mlp")).figure


def _potential() -> Any:
    return plot.potential(load("potential_solve"), symbols=symbols("rubin_cavity")).figure


def _phase_diagram() -> Any:
    ax = plot.phase_diagram(load("phase_grid"), symbols=symbols("rubin_cavity"))
    plot.phase_diagram(load("phase_boundary"), ax, symbols=symbols("rubin_cavity"), caption=False)
    return ax.figure


def _paper_branches() -> Any:
    with plot.paper_style():
        fig, ax = plot.figure("single")
        plot.branch_diagram(load("potential_sweep"), "rho", ax, symbols=symbols("rubin_cavity"))
        fig.canvas.draw()  # lay the figure out inside the style
    return fig


FIGURES: dict[str, Callable[[], Any]] = {
    "branches_potential": _branches_potential,
    "branches_hciz": _branches_hciz,
    "learning_hciz": _learning_hciz,
    "potential": _potential,
    "phase_diagram": _phase_diagram,
    "paper_branches": _paper_branches,
}


@pytest.fixture(autouse=True)
def stable_rendering() -> Iterator[None]:
    with matplotlib.rc_context():
        matplotlib.style.use("default")
        set_font_settings_for_testing()
        set_reproducibility_for_testing()
        yield
    plt.close("all")


#: Resolution of each stored image (a one-column paper figure is 3.4 in wide: drawn finer).
DPI = {"paper_branches": 160}


def _save(fig: Any, path: Path, name: str = "") -> None:
    fig.savefig(path, dpi=DPI.get(name, 80), metadata={"Software": None})


@pytest.mark.parametrize("name", FIGURES)
def test_figure_matches_its_reference(name: str, tmp_path: Path) -> None:
    expected = REFERENCE / f"{name}.png"
    if REDRAW:
        REFERENCE.mkdir(exist_ok=True)
        _save(FIGURES[name](), expected, name)
        pytest.skip(f"redrew {expected}: look at it before committing")
    actual = tmp_path / f"{name}.png"
    _save(FIGURES[name](), actual, name)
    difference = compare_images(str(expected), str(actual), tol=TOLERANCE)
    assert difference is None, difference


def test_the_tolerance_sees_a_figure_lose_its_equilibrium_and_its_values(tmp_path: Path) -> None:
    reference = REFERENCE / "branches_potential.png"
    if REDRAW:
        pytest.skip("references are being redrawn")
    table = symbols("rubin_cavity")
    for broken in ({"equilibrium": False}, {"transitions": False}):
        actual = tmp_path / "broken.png"
        _save(plot.branch_diagram(load("potential_sweep"), "rho", symbols=table, **broken).figure, actual)
        assert compare_images(str(reference), str(actual), tol=TOLERANCE) is not None, broken
        plt.close("all")
