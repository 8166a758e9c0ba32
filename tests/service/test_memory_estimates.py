"""Every theory's memory estimate bounds the memory its solve really takes, measured in a fresh process.

The peak is the process's peak resident size (``ru_maxrss``) minus its size before the solve, in a child of
the same fork server that runs the service's solves. The estimate is what the service checks against
``max_solve_memory_bytes`` before allocating anything; it must never be below the truth, and for the theories
whose memory grows with the spec it must also track it (within a small factor), or the limit means nothing.
"""

from __future__ import annotations

import resource
from typing import Any

import pytest
from pydantic import TypeAdapter

from service.isolation import run_child
from service.schemas import ModelSpec
from solvers.core.options import SolverOptions
from solvers.theories import get, registry

SPEC = TypeAdapter(ModelSpec)
MiB = 2**20


def resident() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def measure(send: Any, spec: dict[str, Any]) -> int:
    """In the child: bytes by which the peak resident size exceeded the size before the solve."""
    model = SPEC.validate_python(spec)
    before = resident()
    get(model.theory).solve(model, SolverOptions(time_limit=120))
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before


EXAMPLES = [dict(e.spec) for t in registry().values() for e in t.examples]
#: Specs whose arrays dominate: the estimate must bound them and stay within GROWING_FACTOR of them.
GROWING = [
    {"theory": "kernel_renormalization", "N1": 200, "T": 0.1,
     "data": {"kind": "teacher", "P": 700, "P_test": 1500, "N0": 1500}},
    {"theory": "rubin_cavity", "mode": "finite_sample", "P": 700, "D": 100, "P_test": 1200, "N": 700, "T": 0.18},
]
GROWING_FACTOR = 4.0


def _check(spec: dict[str, Any]) -> tuple[int, int]:
    model = SPEC.validate_python(spec)
    estimate = get(model.theory).memory_bytes(model)
    peak = run_child(measure, (spec,), seconds=300)
    assert peak <= estimate, f"{spec}: measured {peak / MiB:.0f} MiB above the estimate {estimate / MiB:.0f} MiB"
    return peak, estimate


@pytest.mark.slow
@pytest.mark.parametrize("spec", EXAMPLES, ids=[f"{s['theory']}:{s.get('mode', '')}" for s in EXAMPLES])
def test_the_estimate_bounds_every_example(spec: dict[str, Any]) -> None:
    _check(spec)


@pytest.mark.slow
@pytest.mark.parametrize("spec", GROWING, ids=[s["theory"] for s in GROWING])
def test_the_estimate_bounds_and_tracks_a_spec_whose_arrays_dominate(spec: dict[str, Any]) -> None:
    peak, estimate = _check(spec)
    overhead = 64 * MiB  # the libraries' buffers, included in every estimate
    assert estimate - overhead <= GROWING_FACTOR * peak, (peak / MiB, estimate / MiB)
