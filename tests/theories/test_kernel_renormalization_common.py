"""Shared data and spec builders for the kernel_renormalization tests (no tests of its own)."""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.core.options import SolverOptions
from solvers.theories.kernel_renormalization import THEORY
from solvers.theories.kernel_renormalization.spec import KernelRenormalizationSpec
from tests.payloads import solve_json

OPTIONS = SolverOptions(tol_abs=1e-13, tol_rel=1e-13)


def recipe_data(P: int = 30, N0: int = 50, P_test: int = 20) -> tuple[np.ndarray, ...]:
    """The deterministic dataset of the theory note's test recipe (numpy RandomState streams)."""
    Xa = np.random.RandomState(0).standard_normal((P + P_test, N0))
    t = np.random.RandomState(1).standard_normal(N0)
    ya = np.sign(Xa @ t)
    return Xa[:P], ya[:P], Xa[P:], ya[P:]


def arrays(X: np.ndarray, y: np.ndarray, Xt: np.ndarray, yt: np.ndarray) -> dict[str, Any]:
    return {"kind": "arrays", "X": X.tolist(), "y": y.tolist(), "X_test": Xt.tolist(), "y_test": yt.tolist()}


def make_spec(data: dict[str, Any], **fields: Any) -> KernelRenormalizationSpec:
    body = {"theory": "kernel_renormalization", "activation": "erf", "N1": 30, "T": 0.1, **fields, "data": data}
    return KernelRenormalizationSpec.model_validate(body)


def solve(spec: KernelRenormalizationSpec) -> dict[str, Any]:
    result = solve_json(THEORY, spec, OPTIONS)
    assert result["converged"], result["diagnostics"]
    return result


def qbar_of(result: dict[str, Any]) -> float:
    return float(result["order_parameters"]["Qbar"])
