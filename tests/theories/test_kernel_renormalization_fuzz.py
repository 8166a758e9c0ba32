"""Property test: any valid spec solves to a JSON-safe result (converged or honestly not), never an error."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.theories.kernel_renormalization import THEORY
from solvers.theories.kernel_renormalization.spec import KernelRenormalizationSpec
from tests.payloads import solve_json
from tests.theories.test_kernel_renormalization_common import OPTIONS

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-4, max_value=1e4, allow_nan=False, allow_infinity=False)
#: Degenerate corners (T = 0 with nearly singular kernels) may legitimately fail to converge; a time
#: limit keeps their fallback iterations short.
BOUNDED = OPTIONS.model_copy(update={"time_limit": 1.0})


@st.composite
def data_specs(draw) -> dict[str, Any]:
    kind = draw(st.sampled_from(["arrays", "teacher", "digits"]))
    if kind == "teacher":
        return {"kind": "teacher", "P": draw(st.integers(1, 25)), "P_test": draw(st.integers(1, 5)),
                "N0": draw(st.integers(1, 12)), "seed": draw(st.integers(0, 9)),
                "teacher": draw(st.sampled_from(["linear_sign", "linear", "erf_single_index"]))}
    if kind == "digits":
        a, b = draw(st.lists(st.integers(0, 9), min_size=2, max_size=2, unique=True))
        return {"kind": "digits", "classes": [a, b], "P": draw(st.integers(1, 25)), "P_test": draw(st.integers(1, 5)),
                "seed": draw(st.integers(0, 9))}
    P, N0, Pt = draw(st.integers(1, 8)), draw(st.integers(1, 5)), draw(st.integers(1, 3))
    rows = st.lists(finite, min_size=N0, max_size=N0)
    return {"kind": "arrays", "X": draw(st.lists(rows, min_size=P, max_size=P)),
            "y": draw(st.lists(finite, min_size=P, max_size=P)),
            "X_test": draw(st.lists(rows, min_size=Pt, max_size=Pt)),
            "y_test": draw(st.lists(finite, min_size=Pt, max_size=Pt))}


@st.composite
def specs(draw) -> dict[str, Any]:
    activation = draw(st.sampled_from(["erf", "relu", "linear"]))
    depth = draw(st.integers(1, 3))
    body = {
        "theory": "kernel_renormalization",
        "activation": activation,
        "N1": draw(st.integers(1, 10**6)),
        "depth": depth,
        "T": draw(st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=1e4, allow_nan=False))),
        "lambda0": draw(positive),
        "lambda1": draw(positive),
        "deep_kernel": draw(st.sampled_from(["vanilla", "nested"])),
        "relu_mean_correction": activation == "relu" and depth == 1 and draw(st.booleans()),
        "data": draw(data_specs()),
    }
    return body


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(specs())
def test_every_valid_spec_gives_a_json_safe_result(body: dict[str, Any]) -> None:
    spec = KernelRenormalizationSpec.model_validate(body)
    out = solve_json(THEORY, spec, BOUNDED)
    json.dumps(out, allow_nan=False)
    if out["converged"]:
        q = np.atleast_1d(out["order_parameters"]["Qbar"]).astype(float)
        assert np.all(q > 0)
        eq = next(b for b in out["branches"] if b["name"] == out["equilibrium"])
        assert eq["stable"] is not False
