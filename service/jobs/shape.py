"""How a sweep job is cut: its kind (sweep, phase diagram, boundary), its lines (the units of work: one per row
of a phase diagram) and the points it stores."""

from __future__ import annotations

from typing import Any


def job_kind(payload: dict[str, Any]) -> str:
    """``sweep``, ``phase_diagram`` (one line per row) or ``boundary`` (traced lines: one line of its own kind)."""
    if payload["method"] == "boundary":
        return "boundary"
    return "phase_diagram" if len(payload["parameters"]) == 2 else "sweep"


def line_total(payload: dict[str, Any]) -> int:
    """Points the job stores (a boundary job: its one result)."""
    if job_kind(payload) == "boundary":
        return 1
    rows = len(payload["axes"][0]) if len(payload["axes"]) == 2 else 1
    return rows * len(payload["axes"][-1])


def line_count(payload: dict[str, Any]) -> int:
    return len(payload["axes"][0]) if job_kind(payload) == "phase_diagram" else 1


class LineUnits:
    """How the kernel names a sweep's units: line ``"3"`` is "line 3" in messages and ``line: 3`` in records."""

    @staticmethod
    def label(unit: str) -> str:
        return f"line {unit}"

    @staticmethod
    def where(unit: str) -> dict[str, Any]:
        return {"line": int(unit)}
