"""Validated specs of the ``rubin_cavity`` theory: one model per ``mode``, joined as a tagged union.

Symbols follow the cavity derivation (P samples, input dimension D, likelihood variance T,
per-weight readout variance s_a2); the paper's symbols are given in each description
(n = P, d = D, σ² = T, σ_a² = N s_a2 is the total readout variance, Φ = rho).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


@dataclass
class FiniteSampleLimits:
    """Size limits of ``finite_sample`` (P x P kernels); a deployment may lower or raise them."""

    max_P: int = 5000
    max_P_test: int = 20000
    max_D: int = 20000


#: Default maximum number of training samples of ``finite_sample`` (its cost is O(P³)).
MAX_FINITE_SAMPLE_P = 5000
LIMITS = FiniteSampleLimits(max_P=MAX_FINITE_SAMPLE_P)

_BASE = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

SIGMA_W2 = "Hidden-weight prior variance σ_w² (w_i ~ N(0, σ_w²/D · I_D)); O(1). Paper and blog: 0.5."
EPSILON = "Cubic strength ε of the teacher y = H1(z) + ε H3(z), H3(z) = z³ − 3z. Paper: −0.3."
SCALING = (
    "mean_field: the paper's reduced action Ŝ (eq. 13; the blog's U/D with L → 1). standard: the blog's cavity "
    "potential U(ρ; b, c)/D keeping the ½ log L and 1/L factors, L = 1 + (s_a2 P/T) v(σ_w² + ρ²)."
)


class PotentialSpec(BaseModel):
    """The mean-field overlap potential Ũ_u(ρ)/D at fixed residual coefficients (b, c)."""

    model_config = _BASE

    theory: Literal["rubin_cavity"] = Field(description="Theory name.")
    mode: Literal["potential"] = Field(
        description="potential: wells of Ũ_u(ρ)/D at fixed (b, c, u); no self-consistency."
    )
    sigma_w2: float = Field(0.5, gt=0, le=1e3, description=SIGMA_W2)
    b: float = Field(
        0.3, ge=-100, le=100, description="Residual coefficient on H1 (unlearned linear part; 1 = nothing learned)."
    )
    c: float = Field(
        -0.3, ge=-100, le=100, description="Residual coefficient on H3 (unlearned cubic part; ε = nothing learned)."
    )
    u: float = Field(
        29.45,
        ge=0,
        le=1e8,
        description="Interaction strength u = P² s_a2/(T² D) (paper: n² σ_a²/(σ⁴ d N)); invariant under the "
        "paper's (α, β) scaling. The blog's equal-depth point at σ_w² = 0.5, b = 0.3, c = −0.3 is u = 75π/8 ≈ 29.45.",
    )
    D: float | None = Field(
        None,
        ge=1,
        le=1e9,
        description="Input dimension d. Optional: when given, well weights and R = E[ρ²] are computed for the "
        "finite-D law p(ρ) ∝ exp(−D Ũ_u(ρ)/D); when null only the D → ∞ (saddle-point) picture is reported.",
    )


class _NetworkSpec(BaseModel):
    """Fields shared by the self-consistent modes (the paper's main experiment as defaults)."""

    model_config = _BASE

    theory: Literal["rubin_cavity"] = Field(description="Theory name.")
    sigma_w2: float = Field(0.5, gt=0, le=1e3, description=SIGMA_W2)
    epsilon: float = Field(-0.3, ge=-100, le=100, description=EPSILON)
    N: float = Field(700, ge=1, le=1e12, description="Hidden width N (number of erf neurons). Paper: 700.")
    T: float = Field(
        0.18,
        gt=0,
        le=1e6,
        description="Likelihood (noise) variance T = σ² of the Gaussian likelihood; the Langevin temperature of a "
        "sum-of-squares loss is 2T. Paper: σ² ∈ [0.1, 0.3], transition near 0.18.",
    )
    s_a2: float = Field(
        8 / 700**2,
        gt=0,
        le=1e6,
        description="Per-weight readout prior variance, a_i ~ N(0, s_a2); the paper's total σ_a² = N s_a2 "
        "(paper: σ_a² = 8/N, so s_a2 = 8/N² = 8/700²).",
    )
    scaling: Literal["mean_field", "standard"] = Field("mean_field", description=SCALING)


class SelfConsistentSpec(_NetworkSpec):
    """The equivalent-kernel (population) theory: (b, c) jointly with p(ρ) ∝ exp(−D Ŝ(ρ; b, c)).

    The theory depends on P and T only through P/T, so the interaction strength u = P² s_a2/(T² D) may
    be given instead of T: an input key ``u`` sets T = P √(s_a2/(u D)) (and replaces a T given with it).
    This is how sweeps in ``u`` move the spec.
    """

    mode: Literal["self_consistent"] = Field(
        description="self_consistent: population theory of the 2024 paper; reports the D → ∞ saddle-point "
        "solution and the finite-D quadrature solution."
    )
    D: float = Field(150, ge=1, le=1e9, description="Input dimension d. Paper: 150.")
    P: float = Field(
        3000, ge=1, le=1e12, description="Number of training samples n (population theory: enters through P/T)."
    )

    @model_validator(mode="before")
    @classmethod
    def _u_sets_T(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "u" not in data:
            return data
        data = dict(data)
        u = data.pop("u")
        if isinstance(u, bool) or not isinstance(u, int | float) or not math.isfinite(u) or u <= 0:
            raise ValueError(f"u must be a finite number > 0 (got {u!r})")
        fields = cls.model_fields
        P = data.get("P", fields["P"].default)
        D = data.get("D", fields["D"].default)
        s_a2 = data.get("s_a2", fields["s_a2"].default)
        try:
            data["T"] = float(P) * math.sqrt(float(s_a2) / (float(u) * float(D)))
        except (TypeError, ValueError, ZeroDivisionError):
            return data  # P, D or s_a2 invalid: their own validators name them
        return data


class FiniteSampleSpec(_NetworkSpec):
    """The blog's self-consistency loop on an actual, seeded training set."""

    mode: Literal["finite_sample"] = Field(
        description="finite_sample: adaptive-kernel regression on P seeded Gaussian inputs, (b, c) from a least-"
        "squares projection of the mean residual."
    )
    D: int = Field(150, ge=1, description="Input dimension d (size of each input vector).")
    P: int = Field(
        3000, ge=1, description="Number of training samples n; the cost is one P x P kernel and solve per evaluation."
    )
    P_test: int = Field(2000, ge=1, description="Fresh test inputs for the test error of the posterior mean.")
    seed: int = Field(0, ge=0, le=2**63 - 1, description="Seed of the training and test inputs.")

    @field_validator("P")
    @classmethod
    def _p_limit(cls, v: int) -> int:
        if v > LIMITS.max_P:
            raise ValueError(f"P = {v} exceeds the configured maximum of {LIMITS.max_P} training samples")
        return v

    @field_validator("P_test")
    @classmethod
    def _p_test_limit(cls, v: int) -> int:
        if v > LIMITS.max_P_test:
            raise ValueError(f"P_test = {v} exceeds the configured maximum of {LIMITS.max_P_test} test samples")
        return v

    @field_validator("D")
    @classmethod
    def _d_limit(cls, v: int) -> int:
        if v > LIMITS.max_D:
            raise ValueError(f"D = {v} exceeds the configured maximum of {LIMITS.max_D} input dimensions")
        return v


RubinCavitySpec = Annotated[PotentialSpec | SelfConsistentSpec | FiniteSampleSpec, Field(discriminator="mode")]

SWEEPABLE: dict[str, tuple[str, ...]] = {
    "potential": ("u", "b", "c", "sigma_w2", "D"),
    "self_consistent": ("T", "P", "N", "u", "sigma_w2", "epsilon", "s_a2", "D"),
    "finite_sample": ("T", "N", "s_a2", "epsilon", "sigma_w2"),
}
