"""Which integer fields each theory continues as real numbers (``Theory.real_integers``), and what the generic
two-parameter problem does with the others.

The declaration is each theory's own (its equations), never read off a field's type: a declared field must be an
integer field of the theory's spec (a float field needs no declaration), and an integer field the theory does not
declare is refused by name.
"""

from __future__ import annotations

import math
import typing

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from service.app import create_app
from solvers.core.problem import Problem
from solvers.theories import registry
from solvers.theories.modes import Modes
from solvers.theories.two_parameter import integer_field, rebound, spec_with_real
from tests.service.conftest import settings

#: What each theory declares: the widths and sample counts its equations hold as real numbers.
DECLARED = {"mean_field_ard": {"N", "P"}, "kernel_renormalization": {"N1"}, "hciz_mlp": set(),
            "rubin_cavity": set(), "matrix_denoising": set()}


def _spec_models(theory) -> list[type[BaseModel]]:
    theories = theory.modes.values() if isinstance(theory, Modes) else [theory]
    out = []
    for t in theories:
        for m in typing.get_args(t.spec_model) or (t.spec_model,):
            inner = typing.get_args(m)
            out.extend(x for x in (typing.get_args(inner[0]) if inner else (m,)) if isinstance(x, type))
    return [m for m in out if issubclass(m, BaseModel)]


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_each_theory_declares_its_real_integer_fields(name: str) -> None:
    theory = registry()[name]
    assert set(theory.real_integers) == DECLARED[name]
    models = _spec_models(theory)
    for field in theory.real_integers:
        owners = [m for m in models if field in m.model_fields]
        assert owners and all(integer_field(m.model_construct(), field) for m in owners), field


def test_the_declarations_are_served() -> None:
    with TestClient(create_app(settings())) as api:
        served = {t["name"]: set(t["real_integers"]) for t in api.get("/v1/theories").json()}
    assert served == {name: DECLARED[name] for name in served} and served


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_every_sweepable_integer_field_is_declared_real(name: str) -> None:
    """No theory sweeps an integer field its equations hold at integers only (a depth, a data set's size): every
    boundary job over sweepable fields is traced by continuation. A theory that adds one must serve its boxes
    otherwise (today such a box is a 422 naming the field)."""
    theory = registry()[name]
    for t in theory.modes.values() if isinstance(theory, Modes) else [theory]:
        for m in _spec_models(t):
            for field in t.sweepable:
                if field in m.model_fields and integer_field(m.model_construct(), field):
                    assert field in t.real_integers, (t.name, m.__name__, field)


class _Spec(BaseModel):
    width: int = Field(ge=1)
    depth: int = Field(1, ge=1)
    scale: float = Field(1.0, gt=0)


class _Linear:
    """x = width·scale/depth: a closed form to read the spec each bound problem was built from."""

    def problem(self, spec: _Spec, parameter: str | None = None, options=None) -> Problem:
        fixed = {k: float(getattr(spec, k)) for k in ("width", "depth", "scale")}

        def residual(x: np.ndarray, p: float) -> np.ndarray:
            v = fixed | {parameter: p}
            return x - v["width"] * v["scale"] / v["depth"]

        return Problem(residual=residual, dim=1, starts=lambda p: {"one": np.zeros(1)})


def test_two_real_integer_fields_are_continued_at_real_values() -> None:
    spec = _Spec(width=3, depth=2)
    problem = rebound(_Linear(), spec, ("width", "depth"), real=("width", "depth"))
    lam = np.array([3.25, 2.5])
    assert problem.F(np.zeros(1), lam)[0] == pytest.approx(-3.25 / 2.5)
    assert math.isnan(problem.F(np.zeros(1), np.array([0.5, 2.0]))[0]), "width 0.5 < 1 lies outside the domain"


def test_an_integer_field_not_declared_real_is_refused_by_name() -> None:
    spec = _Spec(width=3)
    with pytest.raises(ValueError, match=r"\['depth'\] take integer values only"):
        rebound(_Linear(), spec, ("width", "depth"), real=("width",))
    with pytest.raises(ValueError, match=r"\['width'\] take integer values only"):
        rebound(_Linear(), spec, ("scale", "width"))
    rebound(_Linear(), spec, ("scale", "width"), real=("width",))  # declared: the bound problem's real control


def test_a_real_value_is_validated_at_the_nearest_integer() -> None:
    base = _Spec(width=3).model_dump()
    spec = spec_with_real(_Spec, base, "width", 7.4)
    assert spec.width == 7.4 and spec.depth == 1
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        spec_with_real(_Spec, base, "width", 0.5)
