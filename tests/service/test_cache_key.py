"""Properties of the cache key: canonical over spellings, sensitive to every numerical option."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from service.keys import spec_hash
from service.schemas import ModelSpec
from solvers.core.options import SolverOptions

SPEC = TypeAdapter(ModelSpec)
pos = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)


def potential(**kw: float) -> dict:
    return {"theory": "rubin_cavity", "mode": "potential", **kw}


@settings(max_examples=60, deadline=None)
@given(s=pos, b=st.floats(-2, 2), u=pos, perm=st.permutations(["theory", "mode", "sigma_w2", "b", "u"]))
def test_key_order_and_float_spelling_do_not_change_the_key(s: float, b: float, u: float, perm: list[str]) -> None:
    d = potential(sigma_w2=s, b=b, u=u)
    reordered = {k: d[k] for k in perm}
    # Re-spell sigma_w2 through text: repr, exponent form and JSON round trip are all the same number. The
    # placeholder confines the respelling to that field (repr(s) can also occur inside another number's digits).
    marked = {k: ("@sigma_w2@" if k == "sigma_w2" else v) for k, v in reordered.items()}
    text = json.dumps(marked).replace('"@sigma_w2@"', f"{s:.17e}")
    respelled = json.loads(text)
    h1 = spec_hash(SPEC.validate_python(d), SolverOptions())
    h2 = spec_hash(SPEC.validate_python(respelled), SolverOptions())
    assert h1 == h2


def test_integer_and_float_spellings_of_a_value_agree() -> None:
    a = SPEC.validate_python(potential(sigma_w2=1, b=0, u=30))
    b = SPEC.validate_python(potential(sigma_w2=1.0, b=0.0, u=3e1))
    assert spec_hash(a, SolverOptions()) == spec_hash(b, SolverOptions())


def test_stating_a_default_does_not_change_the_key() -> None:
    a = SPEC.validate_python(potential(u=30.0))
    assert spec_hash(a, SolverOptions()) == spec_hash(a, SolverOptions(method="auto"))


NUMERIC_OPTIONS = {
    "method": ["picard", "anderson", "newton"],
    "mixing": [0.1, 0.99],
    "anderson_memory": [2, 9],
    "anderson_regularization": [0.0, 1e-3],
    "tol_abs": [1e-8, 1e-12],
    "tol_rel": [0.0, 1e-6],
    "max_iterations": [10, 99],
    "quadrature_order": [16, 400],
    "time_limit": [1.0, 100.0],
}


@settings(max_examples=60, deadline=None)
@given(field=st.sampled_from(sorted(NUMERIC_OPTIONS)), data=st.data())
def test_any_numerical_option_changes_the_key(field: str, data: st.DataObject) -> None:
    value = data.draw(st.sampled_from(NUMERIC_OPTIONS[field]))
    spec = SPEC.validate_python(potential(u=30.0))
    assert spec_hash(spec, SolverOptions()) != spec_hash(spec, SolverOptions(**{field: value}))


@given(field=st.sampled_from(["ds", "ds_max", "max_steps", "max_angle"]))
def test_continuation_options_change_the_key(field: str) -> None:
    spec = SPEC.validate_python(potential(u=30.0))
    value = {"ds": 0.02, "ds_max": 0.1, "max_steps": 77, "max_angle": 0.2}[field]  # none of them the default
    assert spec_hash(spec, SolverOptions()) != spec_hash(spec, SolverOptions(continuation={field: value}))
