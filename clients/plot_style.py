"""How SaddleLab's figures look: line styles per stability and per kind of transition, and a paper style (journal
column widths, print font sizes, vector output) as an option.

    from clients import plot
    with plot.paper_style():
        fig, ax = plot.figure("single")            # 3.4 in wide: one column; "double": 7.0 in
        plot.branch_diagram(result, "rho", ax=ax, symbols=lab)
        plot.save(fig, "branches.pdf")             # vector (PDF, SVG, EPS by the extension), fonts embedded
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from clients.install_hints import install_hint

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
#: A metastable stretch (stable, not the equilibrium) is drawn this many times as wide as the equilibrium's.
METASTABLE_WIDTH = 0.55
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
        raise ImportError(install_hint("clients.plot", "plot")) from exc
    return matplotlib


class _LowFontTimestamp(logging.Filter):
    """Drops fontTools' "'created' timestamp seems very low" warnings. Matplotlib's Computer Modern fonts (the
    BaKoMa cmr10, cmmi10, cmsy10 of the paper style's mathtext) store their creation and modification dates as Unix
    times where TrueType expects seconds since 1904; fontTools reads each of them once per font when a PDF or
    PostScript file embeds them as Type 42 (six lines per save), and the dates play no part in the file."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "timestamp seems very low" not in record.getMessage()


#: fontTools' logger of the font header table, where those warnings come from.
FONT_HEADER_LOGGER = "fontTools.ttLib.tables._h_e_a_d"


@contextmanager
def _quiet_font_dates() -> Iterator[None]:
    logger, quiet = logging.getLogger(FONT_HEADER_LOGGER), _LowFontTimestamp()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


@contextmanager
def paper_style() -> Iterator[None]:
    """Within this block figures use :data:`PAPER_RC` (print sizes, Computer Modern mathtext, embedded fonts)."""
    with _matplotlib().rc_context(PAPER_RC), _quiet_font_dates():
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
    with _quiet_font_dates():
        fig.savefig(path, bbox_inches="tight", metadata=metadata, **kw)


#: Log-axis tick labels are thinned until this many points separate any two.
TICK_GAP = 2.0


def _plain(value: float) -> str:
    return f"{value:g}".replace("-", "\N{MINUS SIGN}")


def _mantissa(value: float) -> int:
    return round(value / 10.0 ** math.floor(math.log10(value) + 1e-9)) if value > 0 else 0


def _label_size(axis: Any, horizontal: bool) -> float:
    from matplotlib.font_manager import FontProperties

    size = _matplotlib().rcParams["xtick.labelsize" if horizontal else "ytick.labelsize"]
    return float(FontProperties(size=size).get_size_in_points())


def _thin_minor_labels(axis: Any, values: Sequence[float]) -> list[str]:
    """Labels of the minor ticks of a log axis spanning less than two decades: mantissas 2 and 5, then 3, each only
    where it keeps :data:`TICK_GAP` points from every label already kept (the major ones first), judged by the
    axis' length in points and the labels' font size (a label is about 0.6 em a character wide, one line high)."""
    lo, hi = sorted(axis.get_view_interval())
    out = [""] * len(values)
    if lo <= 0 or math.log10(hi / lo) >= 2.0:
        return out
    ax = axis.axes
    horizontal = axis is ax.xaxis
    box = ax.get_window_extent()
    per_decade = (box.width if horizontal else box.height) * 72.0 / ax.figure.dpi / math.log10(hi / lo)
    size = _label_size(axis, horizontal)

    def extent(v: float) -> float:
        return 0.6 * size * len(_plain(v)) if horizontal else size

    def clear(v: float, kept: list[float]) -> bool:
        return all(abs(math.log10(v / k)) * per_decade - (extent(v) + extent(k)) / 2 >= TICK_GAP for k in kept)

    kept = [v for v in axis.get_majorticklocs() if lo <= v <= hi]
    for wanted in ((2, 5), (3,)):
        for i, v in enumerate(values):
            if _mantissa(v) in wanted and lo <= v <= hi and clear(v, kept):
                out[i] = _plain(v)
                kept.append(v)
    return out


def tidy_log_ticks(ax: Any) -> None:
    """Plain numbers (0.02, 50, 800) on the log axes of ``ax``, and no two tick labels that touch: minor ticks are
    labelled only where the axis spans less than two decades and a label clears its neighbours, judged again each
    time the figure is drawn (a layout may have narrowed the axes)."""
    from matplotlib.ticker import Formatter, FuncFormatter, LogLocator

    class ThinMinorLabels(Formatter):
        def __call__(self, x: float, pos: Any = None) -> str:
            return ""

        def format_ticks(self, values: Sequence[float]) -> list[str]:
            return _thin_minor_labels(self.axis, list(values))

    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() != "log":
            continue
        axis.set_major_formatter(FuncFormatter(lambda v, _: _plain(v)))
        axis.set_minor_locator(LogLocator(subs=(2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)))
        axis.set_minor_formatter(ThinMinorLabels())
