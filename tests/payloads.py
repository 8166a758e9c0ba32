"""A theory's typed results in the HTTP contract's JSON, for tests that check the shape users see."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from service.serialize import solution_json
from service.serialize import sweep_json as _sweep_json
from solvers.core.options import SolverOptions
from solvers.theories.base import Theory


def solve_json(theory: Theory, spec: BaseModel, options: SolverOptions) -> dict[str, Any]:
    return solution_json(theory.name, theory.solve(spec, options))


def sweep_json(
    theory: Theory, spec: BaseModel, parameter: str, values: Sequence[float], method: str, options: SolverOptions
) -> dict[str, Any]:
    return _sweep_json(theory.name, parameter, theory.sweep(spec, parameter, values, method, options))
