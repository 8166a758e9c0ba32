"""What a result says about its own quantities: the table entries (symbol, long name, units, role) of every quantity
it reports, once per result, under ``quantities``.

A result read back from a file months later is labelled as on the day it was computed, with no server: figures,
arrays and tables take their symbols and units from here. Only the entries of what the result holds are carried:
the names its solves, points, branches and curves report (a nested or tabulated one with all of its columns, as the
theory's table declares them), the swept parameters, the model's declared fields (a figure's caption), and the
fields of every branch (free entropy, stability, convergence).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from solvers.theories import get as get_theory
from solvers.theories.quantities import BRANCH_QUANTITIES

#: The groups of quantities a solve, a point, a branch or a curve reports.
GROUPS = ("order_parameters", "observables")


def _reported(entries: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names each entry's groups report (a branch's and an experiment's ``theory`` solve's too), in order."""
    names: dict[str, None] = {}

    def visit(entry: Mapping[str, Any]) -> None:
        for group in GROUPS:
            names.update(dict.fromkeys(entry.get(group) or {}))
        for branch in entry.get("branches") or []:
            if isinstance(branch, Mapping):  # a curve's branches are names
                visit(branch)
        if isinstance(entry.get("theory"), Mapping):
            visit(entry["theory"])

    for entry in entries:
        visit(entry)
    return list(names)


def result_quantities(theory: str, entries: Iterable[Mapping[str, Any]] = (), *, parameters: Iterable[str] = (),
                      model: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """``{dotted name: {"symbol", "long_name", "units", "role"[, "dims"]}}`` of what ``entries`` (solves, points,
    curves, experiment points) report, of ``parameters`` and of the fields of ``model``."""
    table = get_theory(theory).quantities
    declared = table.names()
    wanted: list[str] = [*parameters, *(model or {})]
    for name in _reported(entries):
        wanted.append(name)
        wanted.extend(n for n in declared if n.startswith(name + "."))  # a nested group's or a table's columns
    wanted.extend(q.name for q in BRANCH_QUANTITIES)
    return table.entries(wanted)


def merged(parts: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """The ``quantities`` of a job from its lines' (the union, first entry kept)."""
    out: dict[str, Any] = {}
    for part in parts:
        for name, entry in (part or {}).items():
            out.setdefault(name, entry)
    return out
