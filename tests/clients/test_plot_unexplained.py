"""A boundary job's unexplained crossings are marked on its phase diagram where the scans saw them, one legend entry
per kind, in the colour of that kind of line; a result without any draws none."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from clients import plot
from clients.plot_style import transition_style
from tests.clients.figure_data import load


@pytest.fixture(autouse=True)
def _close() -> Iterator[None]:
    yield
    plt.close("all")


def _marks(ax) -> dict[str, list[tuple[float, float]]]:
    return {str(ln.get_gid()): list(zip(ln.get_xdata(), ln.get_ydata(), strict=True)) for ln in ax.get_lines()
            if str(ln.get_gid()).startswith("unexplained")}


def test_unexplained_crossings_are_marked_where_they_were_seen() -> None:
    result = copy.deepcopy(load("phase_boundary"))
    assert _marks(plot.phase_diagram(result)) == {}
    result["unexplained"] = [
        {"kind": "first_order", "type": "first_order", "point": [0.3, 40.0], "branches": ["center", "aligned"],
         "scan": "b = 0.3", "detail": "its line could not be continued"},
        {"kind": "spinodal", "type": "fold", "point": [0.26, 12.0], "branches": [], "scan": "u = 10 (edge)",
         "detail": "could not be traced"},
        {"kind": "first_order", "type": "first_order", "point": [0.35, 55.0], "branches": [], "scan": "b = 0.35",
         "detail": "could not be traced"},
    ]
    ax = plot.phase_diagram(result)
    marks = _marks(ax)
    # (p2, p1) on the axes, like the lines
    assert marks == {"unexplained:first order": [(40.0, 0.3), (55.0, 0.35)], "unexplained:spinodal": [(12.0, 0.26)]}
    (first,) = [ln for ln in ax.get_lines() if ln.get_gid() == "unexplained:first order"]
    assert first.get_markeredgecolor() == transition_style("first order")["color"]
    labels = ax.get_legend_handles_labels()[1]
    assert "first order, seen but not traced" in labels and "spinodal, seen but not traced" in labels


def _caption_text(ax) -> str:
    return "".join(t.get_text() for t in ax.texts if t.get_gid() == plot.CAPTION)


def test_integer_fields_continued_as_real_are_named_in_the_caption() -> None:
    """The lines pass through real values of an integer field (a width): the caption says so, only then."""
    result = copy.deepcopy(load("phase_boundary"))
    assert "continued as real" not in _caption_text(plot.phase_diagram(result))
    result["continued_as_real"] = ["b", "u"]
    text = _caption_text(plot.phase_diagram(result))
    assert "integer fields, continued as real numbers along the lines" in text
    assert text.count("continued as real") == 1 and " and " in text.splitlines()[-1]
