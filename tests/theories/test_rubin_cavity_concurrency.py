"""``rubin_cavity`` under threads: sweeps of one base spec run at the same time give exactly their serial results.

Each pair sweeps the same parameter over different values, so two bound problems of the same spec are
alive at once: any state shared between them (a memo of saddle states, an evaluator whose targets move
with ε, a warm start) would show as a difference from the serial run.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from solvers.core.options import SolverOptions
from solvers.theories import get
from tests.payloads import sweep_json

THEORY = get("rubin_cavity")
SPEC = TypeAdapter(THEORY.spec_model)
SELF_CONSISTENT = {"theory": "rubin_cavity", "mode": "self_consistent"}
FINITE_SAMPLE = {
    "theory": "rubin_cavity", "mode": "finite_sample", "P": 150, "D": 20, "N": 100, "s_a2": 8 / 100**2, "T": 0.3,
    "P_test": 20,
}
SWEEPS: list[tuple[dict[str, Any], str, list[float], str]] = [
    (SELF_CONSISTENT, "T", list(np.linspace(0.15, 0.21, 13)), "continuation"),
    (SELF_CONSISTENT, "T", list(np.linspace(0.2, 0.16, 9)), "grid"),
    (FINITE_SAMPLE, "epsilon", [-0.3, -0.25, -0.2], "grid"),
    (FINITE_SAMPLE, "epsilon", [-0.22, -0.35], "grid"),
]


def _timeless(obj: Any) -> Any:
    """The result without wall-clock times (everything else must be identical)."""
    if isinstance(obj, dict):
        return {k: _timeless(v) for k, v in obj.items() if k != "seconds"}
    if isinstance(obj, list):
        return [_timeless(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj


def _run(case: tuple[dict[str, Any], str, list[float], str], barrier: threading.Barrier | None = None) -> Any:
    base, parameter, values, method = case
    spec = SPEC.validate_python(base)
    if barrier is not None:
        barrier.wait()
    return _timeless(sweep_json(THEORY, spec, parameter, values, method, SolverOptions()))


def test_concurrent_sweeps_of_one_spec_equal_their_serial_results() -> None:
    serial = [_run(case) for case in SWEEPS]
    barrier = threading.Barrier(len(SWEEPS))
    with ThreadPoolExecutor(len(SWEEPS)) as pool:
        concurrent = list(pool.map(lambda case: _run(case, barrier), SWEEPS))
    for case, a, b in zip(SWEEPS, serial, concurrent, strict=True):
        assert a == b, case[:2]
    # The sweeps did find what they are about (not empty or failed results compared with each other).
    assert serial[0]["transitions"] and all(pt["converged"] for res in serial for pt in res["points"])
