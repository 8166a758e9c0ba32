"""Spec validation: every bad field is named; sizes are left to the theory's declared limits."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from solvers.theories.mean_field_ard.spec import MeanFieldARDSpec

BASE = {"theory": "mean_field_ard", "d": 10, "N": 32, "kappa": 0.1, "target": {"kind": "parity", "k": 2}}


def check(bad: dict, field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        MeanFieldARDSpec.model_validate(BASE | bad)
    locs = [".".join(str(p) for p in e["loc"]) for e in exc.value.errors()]
    assert any(field in loc for loc in locs), locs


@pytest.mark.parametrize(
    "bad,field",
    [
        ({"d": 0}, "d"),
        ({"N": 0}, "N"),
        ({"P": 0}, "P"),
        ({"kappa": 0.0}, "kappa"),
        ({"kappa": True}, "kappa"),
        ({"target": {"kind": "parity", "k": 0}}, "target"),
        ({"target": {"kind": "parity", "k": 11}}, "target"),
        ({"target": {"kind": "single_index", "hermite": {"25": 1.0}}, "solver": "particles", "P": 5}, "hermite"),
        ({"target": {"kind": "single_index", "hermite": {"x": 1.0}}, "solver": "particles", "P": 5}, "hermite"),
        ({"target": {"kind": "single_index", "hermite": {"1": 1e9}}, "solver": "particles", "P": 5}, "hermite"),
        ({"target": {"kind": "single_index", "hermite": {"2": 0.0}}, "solver": "particles", "P": 5}, "hermite"),
        ({"ard": {"alpha0": -1.0}}, "alpha0"),
        ({"ard": {"alpha0": 0.5, "update": "map"}}, "ard"),
        ({"ard": {"precisions": "per_unit", "alpha0": 1.0}}, "ard"),
        ({"ard": {"precisions": "per_unit", "update": "map"}}, "ard"),
        ({"ard": {"precisions": "each"}}, "precisions"),
        ({"activation": "gelu"}, "activation"),
        ({"data": {"kind": "arrays", "X": [[1.0] * 10], "y": [1.0, 2.0], "X_test": [[1.0] * 10], "y_test": [1.0]},
          "solver": "particles"}, "data"),
    ],
)
def test_bad_fields_are_named(bad: dict, field: str) -> None:
    check(bad, field)


def test_solver_requirements_are_explained() -> None:
    for bad in ({"activation": "erf"}, {"d": 5, "target": {"kind": "parity", "k": 2}},
                {"target": {"kind": "single_index", "hermite": {"1": 1.0}}}):
        with pytest.raises(ValidationError, match="reduced"):
            MeanFieldARDSpec.model_validate(BASE | bad)
    with pytest.raises(ValidationError, match="particles"):
        MeanFieldARDSpec.model_validate(BASE | {"solver": "particles"})  # no data


def test_per_unit_precisions_are_explained() -> None:
    """per_unit needs a Student-t with a variance (α₀ > 1), and the reduced solver's bulk rule needs α₀ ≥ 3; the
    particle solver takes any α₀ > 1; the default reading is the shared one."""
    with pytest.raises(ValidationError, match="variance"):
        MeanFieldARDSpec.model_validate(BASE | {"model": "mf_ard", "ard": {"precisions": "per_unit", "alpha0": 0.1}})
    with pytest.raises(ValidationError, match="particles"):
        MeanFieldARDSpec.model_validate(BASE | {"model": "mf_ard", "ard": {"precisions": "per_unit", "alpha0": 2.0}})
    particles = BASE | {"model": "mf_ard", "solver": "particles", "P": 20,
                        "ard": {"precisions": "per_unit", "alpha0": 2.0}}
    assert MeanFieldARDSpec.model_validate(particles).ard_settings.precisions == "per_unit"
    assert MeanFieldARDSpec.model_validate(BASE | {"model": "mf_ard"}).ard_settings.precisions == "shared"


def test_sizes_are_not_capped_by_the_spec() -> None:
    big = MeanFieldARDSpec.model_validate(BASE | {"d": 100_000, "N": 10**7, "P": 10**6, "solver": "particles"})
    assert big.d == 100_000 and big.n_train == 10**6
    assert MeanFieldARDSpec.model_validate(BASE).beta0 == pytest.approx(4.0 * 1.0 / 10)
