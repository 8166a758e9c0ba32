"""How SaddleLab's figures look: line styles per stability and per kind of transition, and a paper style (journal
column widths, print font sizes, vector output) as an option.

    from clients import plot
    with plot.paper_style():
        fig, ax = plot.figure("single")            # 3.4 in wide: one column; "double": 7.0 in
        plot.branch_diagram(result, "rho", ax=ax, symbols=lab)
        plot.save(fig, "branches.pdf")             # vector (PDF, SVG, EPS by the extension), fonts embedded
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Figure widths in inches: one column and two columns of a two-column journal page (APS, NeurIPS, ICML ≈ 3.3–3.5
#: and 6.75–7.1 in).
WIDTHS = {"single": 3.4, "double": 7.0}

#: rcParams of the paper style: print sizes, Computer Modern mathtext to match a LaTeX text, Type 42 (TrueType)
#: fonts in PDF and PostScript so that journals' checks accept them, text kept as text in SVG.
PAPER_RC: dict[str, Any] = {
    "font.size": 8,
    "axes.titlesize": 7,
    "axes.labelsize": 8,
    "legend.fontsize": 6,
    "legend.handlelength": 1.6,
    "legend.labelspacing": 0.25,
    "legend.borderaxespad": 0.3,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "lines.linewidth": 1.1,
    "lines.markersize": 3.5,
    "axes.linewidth": 0.6,
    "mathtext.fontset": "cm",
    "font.family": "serif",
    "font.serif": ["DejaVu Serif"],
    "legend.frameon": False,
    "figure.dpi": 150,
    "savefig.dpi": 300,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "none",
    "figure.constrained_layout.use": True,
}

#: Stable branches solid, unstable dashed (the theory gives no stability: dash-dotted).
STABILITY_STYLE = {True: "-", False: "--", None: "-."}
#: Each kind of transition (:func:`clients.plot_labels.transition_name`) in branch diagrams and phase diagrams.
TRANSITION_STYLES: dict[str, dict[str, Any]] = {
    "first order": {"color": "crimson", "linestyle": "-"},
    "spinodal": {"color": "0.3", "linestyle": "--"},
    "stability loss": {"color": "tab:blue", "linestyle": "-."},
    "event": {"color": "tab:green", "linestyle": ":"},
}
#: Where a special point lies on its curve.
MARKERS = {"first order": "o", "spinodal": "o", "stability loss": "D", "event": "^"}
#: The equilibrium path: a grey band under the branches, this many times the width of a line.
EQUILIBRIUM_STYLE = {"color": "k", "alpha": 0.18, "solid_capstyle": "round", "zorder": 0}
EQUILIBRIUM_WIDTH = 3.5


def transition_style(name: str) -> dict[str, Any]:
    return dict(TRANSITION_STYLES.get(name, TRANSITION_STYLES["event"]))


def _matplotlib() -> Any:
    try:
        import matplotlib
        import matplotlib.pyplot
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("clients.plot needs matplotlib: pip install matplotlib") from exc
    return matplotlib


@contextmanager
def paper_style() -> Iterator[None]:
    """Within this block figures use :data:`PAPER_RC` (print sizes, Computer Modern mathtext, embedded fonts)."""
    with _matplotlib().rc_context(PAPER_RC):
        yield


def figure(width: str | float = "single", aspect: float = 0.72, nrows: int = 1, ncols: int = 1,
           **kw: Any) -> tuple[Any, Any]:
    """A figure of a journal's width (``"single"``, ``"double"`` or inches) with ``nrows × ncols`` axes, laid out
    by matplotlib's constrained layout (legends and captions outside the axes keep their room); each axes is
    ``aspect`` times as high as wide. Returns (figure, axes) as ``plt.subplots`` does."""
    inches = WIDTHS[width] if isinstance(width, str) else float(width)
    height = inches * aspect * nrows / ncols
    kw.setdefault("layout", "constrained")
    return _matplotlib().pyplot.subplots(nrows, ncols, figsize=(inches, height), **kw)


def save(fig: Any, path: str, **kw: Any) -> None:
    """Save ``fig`` (the format by the extension: .pdf, .svg, .eps vector, .png raster), cropped to its content,
    without a creation date, so the same figure gives the same file."""
    undated = {".pdf": {"CreationDate": None}, ".svg": {"Date": None}}
    metadata = next((m for ext, m in undated.items() if str(path).endswith(ext)), None)
    fig.savefig(path, bbox_inches="tight", metadata=metadata, **kw)
