"""The words and symbols on SaddleLab's figures: each quantity's symbol from the result itself, the caption line of
fixed parameters, and one name per kind of transition for every plot.

Every result carries the table entries of its quantities (``quantities``: symbol, long name, units, role), so a
result read from a JSON or netCDF file is labelled as a live one; the client keeps no table of its own. ``symbols=``
(a :class:`~clients.client.Client`, whose theory tables come from ``GET /v1/theories``, or a table) overrides those
entries; a quantity with no entry anywhere is labelled by its dotted name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clients.names import flatten, is_number

#: A quantity table: dotted name -> {"symbol", "long_name" (or "description"), "units", "role", ...}, as a result
#: carries it (``quantities``) or as ``GET /v1/theories`` serves it.
Table = Mapping[str, Mapping[str, Any]]
#: Fields of a model that name it rather than fix a parameter.
NAMING_FIELDS = ("theory", "mode")
#: The five theories in words a caption opens with (a result names its theory by identifier; the client imports no
#: solver, so it keeps these few words itself). A theory not listed is written in words from its identifier.
THEORY_NAMES = {
    "hciz_mlp": "HCIZ MLP",
    "kernel_renormalization": "kernel renormalization",
    "matrix_denoising": "matrix denoising",
    "mean_field_ard": "mean-field ARD",
    "rubin_cavity": "cavity (Rubin et al.)",
}
#: Modes whose words are not their identifier's.
MODE_NAMES = {"self_consistent": "self-consistent", "finite_sample": "finite sample"}
#: Fields of a model that choose what is reported, not what is computed: never in a caption.
OUTPUT_FIELDS = ("potential_samples",)
#: A caption line breaks after about this many characters (where the figure's width does not say) …
CAPTION_WIDTH = 110
#: … and stops after this many lines (the whole model is the result's ``model``).
CAPTION_LINES = 3
#: A nested setting with more fields than this (a solver's knobs) is left out of a caption.
NESTED_FIELDS = 5


class Symbols:
    """Labels of one theory's quantities: the served symbol (mathtext) of a dotted name, else the name itself."""

    def __init__(self, table: Table | None = None):
        self.table: Table = table or {}

    @classmethod
    def of(cls, source: Any, theory: str | None, carried: Table | None = None) -> Symbols:
        """The ``carried`` entries (a result's ``quantities``) overridden by ``source``: a client (anything with
        ``quantities(theory)``), a table, an existing :class:`Symbols` or None."""
        if isinstance(source, Symbols):
            return source
        table = dict(carried or {})
        if source is None:
            pass
        elif callable(getattr(source, "quantities", None)):
            table.update(source.quantities(theory) if theory else {})
        elif isinstance(source, Mapping):
            table.update(source)
        else:
            raise TypeError("symbols= takes a Client, a quantity table (name -> {'symbol', ...}) or None")
        return cls(table)

    def __call__(self, name: str) -> str:
        entry = self.table.get(name)
        return str(entry["symbol"]) if entry and entry.get("symbol") else name

    def describe(self, name: str) -> str | None:
        entry = self.table.get(name) or {}
        text = entry.get("long_name") or entry.get("description")
        return str(text) if text else None

    def units(self, name: str) -> str | None:
        entry = self.table.get(name) or {}
        return str(entry["units"]) if entry.get("units") else None

    def headlines(self) -> list[str]:
        """The quantities the table names its theory's headline (one; none without a table)."""
        return [name for name, entry in self.table.items() if entry.get("role") == "headline"]


def number(value: float) -> str:
    """A number as a figure shows it: four significant digits, a true minus sign."""
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return text.replace("-", "−")


def value_label(value: float) -> str:
    """A located transition's value, to six significant digits (28.3225, 29.4524)."""
    return f"{value:.6g}".replace("-", "−")


def _visible(text: str) -> int:
    """Roughly how many characters a mathtext string shows (``$\\sigma_w^2$`` shows three)."""
    shown, i = 0, 0
    while i < len(text):
        if text[i] == "\\":
            j = i + 1
            while j < len(text) and text[j].isalpha():
                j += 1
            shown, i = shown + 1, j
            continue
        shown += text[i] not in "${}^_"
        i += 1
    return shown


def caption(model: Mapping[str, Any] | None, symbols: Symbols, exclude: tuple[str, ...] = (),
            width: int = CAPTION_WIDTH) -> str | None:
    """The fixed parameters of a result: its theory and mode, then every scalar field of its model (a short nested
    setting's by dotted name, ``data.P``) but the swept ones and ``exclude``, each as ``symbol = value``, broken
    into lines of about ``width`` characters between parameters (at most :data:`CAPTION_LINES`). None without a
    model."""
    if not model:
        return None
    head = title(model)
    parts = []
    for name, value in _settings(model).items():
        if name in NAMING_FIELDS or name in OUTPUT_FIELDS or name in exclude:
            continue
        if is_number(value):
            parts.append(f"{_number_name(name, symbols)} = {number(value)}")
        else:
            parts.append(f"{_setting_name(name, symbols)} = {_words(str(value))}")
    if not parts:
        return head or None
    lines, line = [], f"{head}: " if head else ""
    for k, part in enumerate(parts):
        piece = part + (", " if k + 1 < len(parts) else "")
        if _visible(line) + _visible(piece) > width and line.strip():
            lines.append(line.rstrip())
            line = ""
        line += piece
    lines.append(line)
    if len(lines) > CAPTION_LINES:
        lines = [*lines[:CAPTION_LINES - 1], lines[CAPTION_LINES - 1].rstrip(", ") + ", …"]
    return "\n".join(lines)


def title(model: Mapping[str, Any]) -> str:
    """A model's theory and mode in words ("cavity (Rubin et al.), self-consistent"), never its identifiers."""
    theory, mode = model.get("theory"), model.get("mode")
    words = [THEORY_NAMES.get(theory, _words(theory)) if isinstance(theory, str) else None,
             MODE_NAMES.get(mode, _words(mode)) if isinstance(mode, str) else None]
    return ", ".join(w for w in words if w)


def _number_name(name: str, symbols: Symbols) -> str:
    """A number's name: its symbol; a nested one without a symbol (``data.P_test``) by its leaf's symbol, else the
    leaf's long name, else the leaf as a subscripted symbol (``$P_{\\mathrm{test}}$``) or in words."""
    if symbols(name) != name or "." not in name:
        return symbols(name)
    leaf = name.rsplit(".", 1)[1]
    if symbols(leaf) != leaf:
        return symbols(leaf)
    if symbols.describe(leaf):
        return str(symbols.describe(leaf)).split(" (")[0]
    head, _, sub = leaf.partition("_")
    if sub and "_" not in sub and len(head) <= 2 and head.isalpha():
        return rf"${head}_{{\mathrm{{{sub}}}}}$"
    return _words(leaf)


def _words(identifier: str) -> str:
    """An option's identifier as words (``mean_field`` → "mean field")."""
    return identifier.replace("_", " ")


def _setting_name(name: str, symbols: Symbols) -> str:
    """A setting chosen by a word (an activation, a treatment): its symbol where the table has one, else its name
    in words, a nested setting's ``name`` or ``kind`` field standing for the setting (``activation.name`` →
    "activation", ``data.kind`` → "data")."""
    if symbols(name) != name:
        return symbols(name)
    return _words(name.removesuffix(".name").removesuffix(".kind"))


def _shown(value: Any) -> bool:
    """A value a caption writes: a number or a word (not a flag, a list or null)."""
    return not isinstance(value, bool) and (is_number(value) or isinstance(value, str))


def _settings(model: Mapping[str, Any]) -> dict[str, Any]:
    """The model's scalar fields, and those of a nested setting by dotted name (``data.P``) when it is short (at
    most :data:`NESTED_FIELDS` of them: a data set, a target), not a solver's many knobs."""
    out: dict[str, Any] = {}
    for name, value in model.items():
        if isinstance(value, Mapping):
            leaves = {f"{name}.{k}": v for k, v in flatten(value).items() if _shown(v)}
            if len(leaves) <= NESTED_FIELDS:
                out.update(leaves)
        elif _shown(value):
            out[name] = value
    return out


def transition_name(kind: str, type_: str | None = None) -> str:
    """One name per kind of special point, the same in branch diagrams and in grid and traced phase diagrams:
    a boundary job's ``stability_loss`` line and a sweep's ``spinodal`` of type ``bifurcation`` are both a
    stability loss; a fold is a spinodal."""
    if kind == "first_order":
        return "first order"
    if kind == "stability_loss" or type_ in ("bifurcation", "stability_loss"):
        return "stability loss"
    if kind == "spinodal":
        return "spinodal"
    return kind.replace("_", " ")


def line_name(kind: str, type_: str | None, branches: Any) -> str:
    """A phase-diagram line's name: its kind as :func:`transition_name` says, and its branches in sorted order."""
    names = sorted(str(b) for b in branches or ())
    return f"{transition_name(kind, type_)} ({'/'.join(names)})" if names else transition_name(kind, type_)
