"""Spec validation (bad input is a 422 naming the field) and the three data kinds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from pydantic import ValidationError

from service.app import create_app
from service.limits import check_sizes
from service.settings import Settings
from solvers.theories.kernel_renormalization import THEORY
from solvers.theories.kernel_renormalization.datasets import materialize
from solvers.theories.kernel_renormalization.spec import KernelRenormalizationSpec

GOOD_ARRAYS = {"kind": "arrays", "X": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "y": [1.0, -1.0, 1.0],
               "X_test": [[0.5, 0.5]], "y_test": [1.0]}
DIGITS = {"kind": "digits", "classes": [3, 8], "P": 40, "P_test": 20, "seed": 1}


def body(**patch: Any) -> dict[str, Any]:
    data = patch.pop("data", GOOD_ARRAYS)
    return {"theory": "kernel_renormalization", "activation": "erf", "N1": 10, "T": 0.1, **patch, "data": data}


def error_locs(model: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as err:
        KernelRenormalizationSpec.model_validate(model)
    return [".".join(str(p) for p in e["loc"]) for e in err.value.errors()]


BAD = [
    (body(T=-0.1), "T"),
    (body(N1=0), "N1"),
    (body(depth=0), "depth"),
    (body(lambda0=0.0), "lambda0"),
    (body(lambda1=-1.0), "lambda1"),
    (body(activation="tanh"), "activation"),
    (body(relu_mean_correction=True), "relu_mean_correction"),
    (body(activation="relu", depth=2, relu_mean_correction=True), "relu_mean_correction"),
    (body(data={**GOOD_ARRAYS, "y": [1.0, -1.0]}), "data.arrays.y"),
    (body(data={**GOOD_ARRAYS, "X": []}), "data.arrays.X"),
    (body(data={**GOOD_ARRAYS, "X": [[], [], []]}), "data.arrays.X"),
    (body(data={**GOOD_ARRAYS, "X": [[1.0, 0.0], [0.0], [1.0, 1.0]]}), "data.arrays.X"),
    (body(data={**GOOD_ARRAYS, "X_test": [[0.5, 0.5, 0.5]]}), "data.arrays.X_test"),
    (body(data={**GOOD_ARRAYS, "X_test": [], "y_test": []}), "data.arrays.X_test"),
    (body(data={**GOOD_ARRAYS, "y_test": [1.0, 2.0]}), "data.arrays.y_test"),
    (body(data={**GOOD_ARRAYS, "X": [[1.0, float("nan")], [0.0, 1.0], [1.0, 1.0]]}), "data.arrays.X"),
    (body(data={**GOOD_ARRAYS, "y": [1.0, float("inf"), 1.0]}), "data.arrays.y"),
    (body(data={"kind": "teacher", "P": 0, "N0": 5}), "data.teacher.P"),
    (body(data={"kind": "teacher", "P": 10, "N0": 0}), "data.teacher.N0"),
    (body(data={"kind": "teacher", "P": 10, "N0": 5, "teacher": "quadratic"}), "data.teacher.teacher"),
    (body(data={**DIGITS, "classes": [3, 11]}), "data.digits.classes"),
    (body(data={**DIGITS, "classes": [3, 3]}), "data.digits.classes"),
    (body(data={**DIGITS, "classes": [1, 2, 3]}), "data.digits.classes"),
    (body(data={**DIGITS, "P": 300, "P_test": 100}), "data.digits.P_test"),
    (body(data={"kind": "mnist", "P": 10}), "data"),
    (body(unknown_field=1), "unknown_field"),
]


@pytest.mark.parametrize(("model", "field"), BAD, ids=[f for _, f in BAD])
def test_bad_input_names_the_field(model: dict[str, Any], field: str) -> None:
    locs = error_locs(model)
    assert any(loc == field or loc.startswith(field + ".") for loc in locs), locs


# Sizes are not the spec's to refuse: the theory declares them (field and default limit) and the service
# checks them against its instance's limits.
@pytest.mark.parametrize(
    ("model", "limit", "loc", "value"),
    [
        (body(depth=THEORY.size_limits["kernel_depth"] + 1), "kernel_depth", ("depth",), 21),
        (body(data={"kind": "teacher", "P": THEORY.size_limits["kernel_p"] + 1, "N0": 5}), "kernel_p",
         ("data", "teacher", "P"), 5001),
    ],
    ids=["depth", "data.teacher.P"],
)
def test_sizes_above_the_default_limits_validate_and_are_declared(
    model: dict[str, Any], limit: str, loc: tuple[str, ...], value: float
) -> None:
    spec = KernelRenormalizationSpec.model_validate(model)
    assert THEORY.sizes(spec)[limit] == (loc, value)
    assert THEORY.size_limits[limit] == {"kernel_depth": 20, "kernel_p": 5000}[limit]


def test_P_is_declared_with_its_field_and_the_default_limit() -> None:
    spec = KernelRenormalizationSpec.model_validate(body())
    assert THEORY.sizes(spec)["kernel_p"] == (("data", "arrays", "X"), 3.0)
    assert THEORY.size_limits["kernel_p"] == 5000
    two = KernelRenormalizationSpec.model_validate(body(data={**GOOD_ARRAYS, "X": GOOD_ARRAYS["X"][:2],
                                                              "y": [1.0, -1.0]}))
    assert THEORY.sizes(two)["kernel_p"] == (("data", "arrays", "X"), 2.0)


def test_an_instance_can_raise_the_limit_on_P() -> None:
    """SADDLELAB_LIMIT_KERNEL_P=8000 admits teacher data with P = 6000 (the spec itself never limits P)."""
    spec = KernelRenormalizationSpec.model_validate(body(data={"kind": "teacher", "P": 6000, "N0": 5}))
    check_sizes(spec, Settings(redis_url=None, limits={"kernel_p": 8000.0}))
    with pytest.raises(RequestValidationError) as err:
        check_sizes(spec, Settings(redis_url=None, limits={}))
    assert "kernel_p" in str(err.value.errors())


@pytest.fixture()
def client() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(redis_url=None, api_keys=(), rate_limit_per_minute=0))) as c:
        yield c


HTTP_BAD = [next(b for b in BAD if b[1] == f) for f in ("T", "N1", "data.arrays.y", "data.digits.classes",
                                                         "data.digits.P_test")]


@pytest.mark.parametrize(("model", "field"), HTTP_BAD, ids=lambda v: str(v)[:20])
def test_bad_input_is_a_422_over_http(client: TestClient, model: dict[str, Any], field: str) -> None:
    r = client.post("/v1/solve", json={"model": model})
    assert r.status_code == 422, r.text
    locs = [".".join(str(p) for p in e["loc"]) for e in r.json()["detail"]]
    assert any(field in loc for loc in locs), locs


def test_solve_over_http_returns_the_contract(client: TestClient) -> None:
    r = client.post("/v1/solve", json={"model": body(data={**DIGITS})})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["converged"] and out["equilibrium"] == "renormalized"
    assert out["order_parameters"]["Qbar"] > 0
    for key in ("action", "generalization_error", "generalization_error_nngp", "train_error", "test_mean",
                "test_variance", "class_distance", "weight_correlations"):
        assert key in out["observables"], key
    assert len(out["observables"]["test_mean"]) == DIGITS["P_test"]
    assert set(out["observables"]["class_distance"]) == {"D2", "D2_nngp", "delta1", "delta2"}
    json.dumps(out, allow_nan=False)


# ---- data kinds ------------------------------------------------------------------------------
def test_digits_are_two_classes_labelled_plus_minus_one_and_split_disjointly() -> None:
    spec = KernelRenormalizationSpec.model_validate(body(data=DIGITS))
    ds = materialize(spec.data)
    assert ds.X.shape == (40, 64) and ds.X_test.shape == (20, 64)
    assert set(np.unique(ds.y)) <= {-1.0, 1.0} and set(np.unique(ds.y_test)) <= {-1.0, 1.0}
    assert 10 < (ds.y == 1).sum() < 30  # both classes drawn
    # pixels are standardised on the training set; no test image repeats a training image
    assert np.allclose(ds.X.mean(0), 0.0, atol=1e-12)
    assert np.all(np.isclose(ds.X.std(0), 1.0) | np.isclose(ds.X.std(0), 0.0))
    assert not np.any(np.all(np.isclose(ds.X[:, None, :], ds.X_test[None, :, :]), axis=2))
    again = materialize(KernelRenormalizationSpec.model_validate(body(data=DIGITS)).data)
    assert again.digest == ds.digest  # seeded split is reproducible
    other = materialize(KernelRenormalizationSpec.model_validate(body(data={**DIGITS, "seed": 2})).data)
    assert other.digest != ds.digest


def test_teacher_data_are_seeded_and_follow_the_rule() -> None:
    spec = KernelRenormalizationSpec.model_validate(body(data={"kind": "teacher", "P": 50, "N0": 8, "P_test": 10,
                                                               "seed": 4, "teacher": "linear"}))
    ds = materialize(spec.data)
    sign = materialize(KernelRenormalizationSpec.model_validate(body(data={
        "kind": "teacher", "P": 50, "N0": 8, "P_test": 10, "seed": 4, "teacher": "linear_sign"})).data)
    assert np.array_equal(ds.X, sign.X)  # inputs do not depend on the label rule
    assert np.array_equal(np.where(ds.y >= 0, 1.0, -1.0), sign.y)
    # y is linear in x: recover the teacher by least squares and predict the test labels exactly
    t, *_ = np.linalg.lstsq(ds.X, ds.y, rcond=None)
    assert np.allclose(ds.X_test @ t, ds.y_test, atol=1e-10)


@pytest.mark.parametrize(
    ("data", "limit", "loc"),
    [
        ({"kind": "teacher", "P": 30, "P_test": 10, "N0": 5}, "kernel_p", "model.data.teacher.P"),
        ({"kind": "teacher", "P": 10, "P_test": 30, "N0": 5}, "kernel_p_test", "model.data.teacher.P_test"),
        ({"kind": "teacher", "P": 10, "P_test": 10, "N0": 30}, "kernel_n0", "model.data.teacher.N0"),
        ({**DIGITS, "P": 30}, "kernel_p", "model.data.digits.P"),
        (GOOD_ARRAYS, "kernel_p", "model.data.arrays.X"),
    ],
)
def test_instance_size_limits_are_a_422_naming_the_field(data: dict[str, Any], limit: str, loc: str) -> None:
    limits = {"kernel_p": 20.0, "kernel_p_test": 20.0, "kernel_n0": 20.0, "kernel_depth": 2.0}
    if data is GOOD_ARRAYS:
        limits["kernel_p"] = 2.0
    app = create_app(Settings(redis_url=None, api_keys=(), rate_limit_per_minute=0, limits=limits))
    with TestClient(app) as c:
        r = c.post("/v1/solve", json={"model": body(data=data)})
        assert r.status_code == 422, r.text
        assert limit in r.text
        locs = [".".join(str(p) for p in e["loc"]) for e in r.json()["detail"]]
        assert any(l.endswith(loc) for l in locs), locs
        small = {"kind": "teacher", "P": 10, "P_test": 10, "N0": 5}
        deep = c.post("/v1/solve", json={"model": body(depth=3, data=small)})
        assert deep.status_code == 422 and "kernel_depth" in deep.text
