"""Every size limit of every theory, of the sampler and of an experiment can be raised and lowered by an instance
through ``SADDLELAB_LIMIT_<NAME>``, whatever the spelling of the limit's name.

Regression: the variable's name was lowercased before matching, so mean_field_ard's ``mean_field_N``,
``mean_field_P`` and ``mean_field_P_test`` could not be set: ``SADDLELAB_LIMIT_MEAN_FIELD_N=1e10`` left N capped at
10⁶, and no value could lower it.
"""

from __future__ import annotations

import re

import pytest
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from service.app import create_app
from service.experiments.plan import FOOTPRINT_LIMITS, POINT_LIMITS
from service.limits import check_limits, check_sizes
from service.schemas import ModelSpec
from service.settings import Settings
from solvers.experiments.options import SAMPLER_SIZE_LIMITS
from solvers.theories import registry
from tests.service.conftest import settings

SPEC = TypeAdapter(ModelSpec)


def every_limit() -> dict[str, float]:
    """Limit name -> default, over every installed theory (its own sizes and its network's), the sampler and the
    experiment."""
    out: dict[str, float] = {}
    for theory in registry().values():
        out.update(theory.size_limits)
        out.update(theory.experiment_size_limits)
    return {**out, **SAMPLER_SIZE_LIMITS, **POINT_LIMITS, **FOOTPRINT_LIMITS}


LIMITS = every_limit()


def test_limit_names_are_distinct_without_regard_to_case() -> None:
    assert len({name.lower() for name in LIMITS}) == len(LIMITS)
    assert {"mean_field_N", "mean_field_P", "mean_field_P_test", "experiment_stored_bytes"} <= set(LIMITS)


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_every_limit_is_raised_and_lowered_by_its_variable(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    default = LIMITS[name]
    variable = f"SADDLELAB_LIMIT_{name.upper()}"
    above, below = {name: (("x",), 2 * default)}, {name: (("x",), default / 2)}
    with pytest.raises(RequestValidationError, match=re.escape(f"{name}={default:g}")):
        check_limits(above, LIMITS, Settings(redis_url=None))
    check_limits(below, LIMITS, Settings(redis_url=None))

    monkeypatch.setenv(variable, str(4 * default))  # up: what exceeded the default is admitted
    assert Settings(redis_url=None).limit(name, default) == 4 * default
    check_limits(above, LIMITS, Settings(redis_url=None))

    monkeypatch.setenv(variable, str(default / 4))  # down: what the default admitted is refused, naming the limit
    with pytest.raises(RequestValidationError, match=re.escape(f"{name}={default / 4:g}")):
        check_limits(below, LIMITS, Settings(redis_url=None))


def _examples() -> list[tuple[str, dict]]:
    return [(t.name, dict(e.spec)) for t in registry().values() for e in t.examples]


@pytest.mark.parametrize(("theory", "body"), _examples(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_theorys_declared_sizes_are_held_to_the_variables(theory: str, body: dict,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Lowering a limit below what an example of the theory declares refuses it, naming that limit and the field;
    the theory's own check (check_sizes) is what reads the variable."""
    model = SPEC.validate_python(body)
    declared = registry()[theory].sizes(model)
    for name, (loc, value) in declared.items():
        if value < 2:
            continue  # a size of 1 cannot be lowered below itself and stay a limit
        monkeypatch.setenv(f"SADDLELAB_LIMIT_{name.upper()}", str(value - 1))
        with pytest.raises(RequestValidationError) as refused:
            check_sizes(model, Settings(redis_url=None, max_solve_memory_bytes=0))
        error = refused.value.errors()[0]
        assert error["loc"] == ["body", "model", *loc] and f"{name}={value - 1:g}" in error["msg"], error
        monkeypatch.setenv(f"SADDLELAB_LIMIT_{name.upper()}", str(value))
        check_sizes(model, Settings(redis_url=None, max_solve_memory_bytes=0))
        monkeypatch.delenv(f"SADDLELAB_LIMIT_{name.upper()}")


MEAN_FIELD = {"theory": "mean_field_ard", "d": 12, "N": 2_000_000, "P": 60_000, "kappa": 0.3,
              "target": {"kind": "parity", "k": 2}, "data": {"seed": 0, "P_test": 70_000}}


def test_mean_field_limits_are_raised_and_lowered_through_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """The case the lowercasing broke, end to end: the app reads the variables, the solve route applies them."""
    with TestClient(create_app(settings(max_solve_memory_bytes=0))) as c:
        r = c.post("/v1/solve", json={"model": MEAN_FIELD})
        assert r.status_code == 422 and "mean_field_N=1e+06" in r.text, r.text
    for name, value in (("MEAN_FIELD_N", "1e10"), ("MEAN_FIELD_P", "1e5"), ("MEAN_FIELD_P_TEST", "1e5")):
        monkeypatch.setenv(f"SADDLELAB_LIMIT_{name}", value)
    model = SPEC.validate_python(MEAN_FIELD)
    check_sizes(model, Settings(redis_url=None, max_solve_memory_bytes=0))  # raised: admitted
    monkeypatch.setenv("SADDLELAB_LIMIT_MEAN_FIELD_P_TEST", "100")
    with TestClient(create_app(Settings(redis_url=None, api_keys=(), rate_limit_per_minute=0,
                                        max_solve_memory_bytes=0))) as c:
        r = c.post("/v1/solve", json={"model": MEAN_FIELD})
        assert r.status_code == 422, r.text
        detail = r.json()["detail"][0]
        assert detail["loc"] == ["body", "model", "mean_field_ard", "data", "P_test"] or \
            detail["loc"][-2:] == ["data", "P_test"], detail
        assert "mean_field_P_test=100" in detail["msg"]
