"""How the kernel names an experiment's units: chain c of point p is ``"p:c"``."""

from __future__ import annotations

from typing import Any


def unit_of(point: int, chain: int) -> str:
    return f"{point}:{chain}"


def point_chain(unit: str) -> tuple[int, int]:
    point, chain = unit.split(":")
    return int(point), int(chain)


def experiment_kind(payload: dict[str, Any]) -> str:
    return "experiment" if payload["values"] is None else "learning_curve"


class ChainUnits:
    """Chain ``"0:1"`` is "point 0 chain 1" in messages and ``point: 0, chain: 1`` in records."""

    @staticmethod
    def label(unit: str) -> str:
        point, chain = point_chain(unit)
        return f"point {point} chain {chain}"

    @staticmethod
    def where(unit: str) -> dict[str, Any]:
        point, chain = point_chain(unit)
        return {"point": point, "chain": chain}
