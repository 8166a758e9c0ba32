"""Validated input of the ``kernel_renormalization`` theory.

Every physical range is checked here, so that bad input is a 422 naming the offending field
rather than a failure deep inside a solve. Sizes (P, P_test, N0, depth) are not limited here: the
theory declares them (``KernelRenormalizationTheory.sizes``) and the service checks them against
the limits of its instance.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from solvers.theories.kernel_renormalization.digits import digits_available

_CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)


class ArraysData(BaseModel):
    """Inline data: rows of X are inputs x_μ ∈ R^N0, y their scalar labels."""

    model_config = _CONFIG

    kind: Literal["arrays"] = Field(description="Inline arrays.")
    X: list[list[float]] = Field(description="Training inputs, P rows of N0 numbers (P ≤ the instance limit kernel_p).")
    y: list[float] = Field(description="Training labels y_μ, one per row of X.")
    X_test: list[list[float]] = Field(description="Test inputs, rows of N0 numbers (at least one).")
    y_test: list[float] = Field(description="Test labels, one per row of X_test.")

    @field_validator("X")
    @classmethod
    def _x_shape(cls, X: list[list[float]]) -> list[list[float]]:
        if not X:
            raise ValueError("X is empty: need at least one training input")
        n0 = len(X[0])
        if n0 == 0:
            raise ValueError("rows of X are empty: need N0 ≥ 1")
        if any(len(row) != n0 for row in X):
            raise ValueError("rows of X must all have the same length N0")
        return X

    @field_validator("y")
    @classmethod
    def _y_shape(cls, y: list[float], info: ValidationInfo) -> list[float]:
        X = info.data.get("X")
        if X is not None and len(y) != len(X):
            raise ValueError(f"y has {len(y)} labels but X has {len(X)} rows")
        return y

    @field_validator("X_test")
    @classmethod
    def _xt_shape(cls, X_test: list[list[float]], info: ValidationInfo) -> list[list[float]]:
        if not X_test:
            raise ValueError("X_test is empty: need at least one test input")
        X = info.data.get("X")
        n0 = len(X[0]) if X else None
        if n0 is not None and any(len(row) != n0 for row in X_test):
            raise ValueError(f"rows of X_test must have the N0 = {n0} columns of X")
        return X_test

    @field_validator("y_test")
    @classmethod
    def _yt_shape(cls, y_test: list[float], info: ValidationInfo) -> list[float]:
        X_test = info.data.get("X_test")
        if X_test is not None and len(y_test) != len(X_test):
            raise ValueError(f"y_test has {len(y_test)} labels but X_test has {len(X_test)} rows")
        return y_test


class TeacherData(BaseModel):
    """Gaussian inputs x ~ N(0, I_N0) labelled by a random teacher t ~ N(0, I_N0), both seeded."""

    model_config = _CONFIG

    kind: Literal["teacher"] = Field(description="Synthetic teacher-student data.")
    P: int = Field(ge=1, description="Number of training inputs (≤ the instance limit kernel_p).")
    P_test: int = Field(200, ge=1, description="Number of test inputs (≤ the instance limit kernel_p_test).")
    N0: int = Field(ge=1, description="Input dimension N0 (≤ the instance limit kernel_n0).")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Seed of the input and teacher streams.")
    teacher: Literal["linear_sign", "linear", "erf_single_index"] = Field(
        "linear_sign",
        description="Label rule with z = t·x/√N0: linear_sign y = sign(z); linear y = z; erf_single_index y = erf(z).",
    )


class DigitsData(BaseModel):
    """Two classes of scikit-learn's bundled 8×8 handwritten digits (N0 = 64), labelled +1 / −1."""

    model_config = _CONFIG

    kind: Literal["digits"] = Field(description="scikit-learn's bundled handwritten digits (UCI, 1797 images).")
    classes: list[int] = Field(
        description="The two digits [a, b]; images of a get y = +1, images of b get y = −1.",
    )
    P: int = Field(ge=1, description="Number of training images, drawn from both classes without replacement.")
    P_test: int = Field(100, ge=1, description="Number of test images, disjoint from the training images.")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Seed of the random split.")

    @field_validator("classes")
    @classmethod
    def _classes(cls, classes: list[int]) -> list[int]:
        if len(classes) != 2:
            raise ValueError("classes must name exactly two digits")
        if any(c not in range(10) for c in classes):
            raise ValueError(f"unknown classes {classes}: digits are 0…9")
        if classes[0] == classes[1]:
            raise ValueError("the two classes must differ")
        return classes

    @field_validator("P_test")
    @classmethod
    def _enough_images(cls, P_test: int, info: ValidationInfo) -> int:
        classes, P = info.data.get("classes"), info.data.get("P")
        if classes is not None and P is not None:
            available = digits_available(classes)
            if P + P_test > available:
                raise ValueError(f"P + P_test = {P + P_test} exceeds the {available} images of classes {classes}")
        return P_test


DataSpec = Annotated[ArraysData | TeacherData | DigitsData, Field(discriminator="kind")]


class KernelRenormalizationSpec(BaseModel):
    """A Bayesian fully connected network in the proportional limit (Pacelli et al. 2023).

    Posterior ∝ exp(−(β/2) Σ_μ (y_μ − f(x_μ))² − (λ0/2)‖W‖² − (λ1/2)‖v‖²), standard parameterisation
    f(x) = v·σ(h)/√N1, h = Wx/√N0; the effective action renormalises the NNGP kernel by Q̄ per layer.
    """

    model_config = _CONFIG

    theory: Literal["kernel_renormalization"] = Field(description="Theory name.")
    activation: Literal["erf", "relu", "linear"] = Field(
        "erf", description="Hidden activation σ: erf (variance parameter ½), relu, or linear."
    )
    N1: int = Field(ge=1, le=10**12, description="Hidden width N1 (every hidden layer); α = P/N1 is the load.")
    depth: int = Field(
        1, ge=1, description="Number L of hidden layers, all of width N1 (≤ the instance limit kernel_depth)."
    )
    T: float = Field(
        ge=0.0,
        le=1e12,
        description="Temperature T = 1/β of the Gibbs posterior (label-noise variance). T = 0 uses the closed form.",
    )
    lambda0: float = Field(
        1.0, gt=0.0, le=1e12, description="Prior precision λ0 of first-layer weights, w ~ N(0, 1/λ0)."
    )
    lambda1: float = Field(
        1.0,
        gt=0.0,
        le=1e12,
        description="Prior precision λ1 of the later layers' weights and of the readout v ~ N(0, 1/λ1).",
    )
    deep_kernel: Literal["vanilla", "nested"] = Field(
        "vanilla",
        description="Kernel recursion for depth > 1. vanilla: K_R = (Π Q̄_ℓ) K^(L) with the NNGP recursion "
        "K^(ℓ) = F_σ(K^(ℓ−1))/λ1 (one eigendecomposition); nested: K^(ℓ) = (Q̄_ℓ/λ1) F_σ(K^(ℓ−1)) "
        "(dense algebra per evaluation). They coincide for relu and linear.",
    )
    relu_mean_correction: bool = Field(
        False,
        description="ReLU only, one hidden layer: keep the non-zero prior mean m of σ(h) with the "
        "two-order-parameter action S(Q̄, Q) (Pacelli et al. 2023 SI), K_R = (Q̄/λ1)(K − mmᵀ) + mmᵀ/(λ1(1 + Q)).",
    )
    data: DataSpec = Field(description="Training and test data: inline arrays, a seeded teacher, or digits.")

    @field_validator("relu_mean_correction")
    @classmethod
    def _mean_correction_applies(cls, on: bool, info: ValidationInfo) -> bool:
        if on and info.data.get("activation") not in (None, "relu"):
            raise ValueError("relu_mean_correction applies to activation 'relu' only (erf and linear have zero mean)")
        if on and (info.data.get("depth") or 1) > 1:
            raise ValueError("relu_mean_correction is implemented for one hidden layer (depth = 1) only")
        return on
