"""Validated specs of the ``rubin_cavity`` theory: one model per ``mode``, joined as a tagged union.

Symbols follow the cavity derivation (P samples, input dimension D, likelihood variance T,
per-weight readout variance s_a2); the paper's symbols are given in each description
(n = P, d = D, σ² = T, σ_a² = N s_a2 is the total readout variance, Φ = rho).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

#: Largest integer that JSON numbers (and the service's canonical cache key, RFC 8785) represent exactly.
MAX_EXACT_INT = 2**53 - 1

_BASE = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

SIGMA_W2 = "Hidden-weight prior variance σ_w² (w_i ~ N(0, σ_w²/D · I_D)); O(1). Paper and blog: 0.5."
EPSILON = "Cubic strength ε of the teacher y = H1(z) + ε H3(z), H3(z) = z³ − 3z. Paper: −0.3."
SCALING = (
    "mean_field: the paper's reduced action Ŝ (eq. 13; the blog's U/D with L → 1). standard: the blog's cavity "
    "potential U(ρ; b, c)/D keeping the ½ log L and 1/L factors, L = 1 + (s_a2 P/T) v(σ_w² + ρ²). Selects between "
    "the two cavity forms; the tree-level treatment has one form for every scaling."
)
TREATMENT = (
    "cavity: one neuron against the residual of the others (the 2024 paper and the blog; its form chosen by "
    "scaling). tree_level: the 2025 multi-scale theory at tree level: the readout integrated out and log N(y; 0, "
    "K_W + T I) expanded to first order about the mean kernel K, which adds the variance term "
    "−(s_a2/2) φᵀ(K + T I)⁻¹φ to the mean-field action; the same equations at every scaling (the scale enters "
    "through s_a2 and T), so scaling must stay mean_field with it."
)
FINITE_SAMPLE_TREATMENT = (
    TREATMENT
    + " On a training set (finite_sample) the tree level comes in two forms. tree_level: the fast approximation, "
    "the single-neuron law reduced to the overlap ρ (|w⊥|² at its prior value, sample sums by population values, "
    "one learnability for the D − 1 perpendicular modes); valid for P ≫ D ≫ 1 and κ = s_a2 P/(T D) ≪ 1. "
    "tree_level_unreduced: the same tree level without the reduction, the law in all D input dimensions on the "
    "actual inputs, solved on particles (settings in `particles`); its observables carry their Monte-Carlo "
    "standard errors (R_stderr, b_stderr, …)."
)


def _positive_number(v: Any) -> bool:
    """A finite number > 0 (an integer too large for a float is not one: its field's validator names it)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    if isinstance(v, int) and v.bit_length() > 1023:
        return False
    return math.isfinite(v) and v > 0


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
    potential_samples: int = Field(
        0,
        ge=0,
        le=501,  # every point of a sweep carries its curve: ~2 × 501 numbers a point at most, as a kernel's predictor
        description="When > 0, the potential itself is reported, observables.potential_curve = {rho, value}: "
        "Ũ_u(ρ)/D − Ũ_u(0)/D at this many equally spaced ρ on [−ρ_max, ρ_max] (one more for an even number: the "
        "grid is symmetric about ρ = 0) and at every stationary point ±ρ, "
        "ρ_max = max(1, 1.4 × the outermost stationary point) (for drawing U(ρ)). 0: not reported.",
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
    treatment: Literal["cavity", "tree_level"] = Field("cavity", description=TREATMENT)

    @field_validator("treatment")
    @classmethod
    def _one_tree_level_form(cls, treatment: str, info: ValidationInfo) -> str:
        if treatment.startswith("tree_level") and info.data.get("scaling", "mean_field") != "mean_field":
            raise ValueError(
                "scaling chooses between the cavity forms; the tree-level treatment has one form at every scaling "
                "(set by s_a2 and T), so give tree_level with scaling mean_field (the default)"
            )
        return treatment

    @model_validator(mode="after")
    def _invariants_are_floats(self) -> _NetworkSpec:
        """The theory is written in u, η and the prior variance σ_w²/D of one input coordinate: u and η must be
        finite floats and σ_w²/D a non-zero one (extreme but valid fields can overflow or underflow them)."""
        with np.errstate(all="ignore"):
            P, D, T = np.float64(self.P), np.float64(self.D), np.float64(self.T)  # type: ignore[attr-defined]
            finite = {
                "u = P² s_a2/(T² D)": P * P * self.s_a2 / (T * T * D),
                "η = P N s_a2/(T D)": P * self.N * self.s_a2 / (T * D),
            }
            prior = np.float64(self.sigma_w2) / D
        bad = [name for name, v in finite.items() if not np.isfinite(v)]
        if not (np.isfinite(prior) and prior > 0):
            bad.append("σ_w²/D")
        if bad:
            raise ValueError(f"the derived {', '.join(bad)} is not a representable float for these values")
        return self


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
        if not _positive_number(u):
            raise ValueError(f"u must be a finite number > 0 (got {u!r})")
        fields = cls.model_fields
        P = data.get("P", fields["P"].default)
        D = data.get("D", fields["D"].default)
        s_a2 = data.get("s_a2", fields["s_a2"].default)
        if all(_positive_number(v) for v in (P, D, s_a2)):
            data["T"] = float(P) * math.sqrt(float(s_a2) / (float(u) * float(D)))
        # otherwise P, D or s_a2 is invalid, and its own validator names it
        return data


class ParticleSettings(BaseModel):
    """How the unreduced tree level's single-neuron law is represented: ρ = w·e on a grid of nodes, w⊥ by MALA."""

    model_config = _BASE

    rho_max: float = Field(
        2.0, gt=0, le=100, description="Largest overlap ρ on the grid of nodes ρ_j = j ρ_max/(nodes − 1); the mass "
        "of the last node is reported (monte_carlo.edge_mass) and must be negligible."
    )
    nodes: int = Field(21, ge=3, le=201, description="Nodes of the ρ grid (trapezoid rule on the whole line).")
    chains: int = Field(8, ge=4, le=256, description="MALA chains per node (their groups give the standard errors).")
    burn_in: int = Field(200, ge=10, le=100_000, description="MALA steps per chain before samples are kept.")
    samples: int = Field(8, ge=1, le=1000, description="Particles kept per chain.")
    thin: int = Field(10, ge=1, le=1000, description="MALA steps between kept particles.")
    tempering: float = Field(
        4.0, ge=1, le=1e3, description="The particles are drawn at the law of a likelihood variance this many times "
        "the smallest T they serve (a broader law than the ones solved, so that reweighting to those keeps most "
        "samples)."
    )
    stages: int = Field(
        2, ge=1, le=10, description="Sample-then-solve stages at the tempered T: stage 1 samples at the NNGP kernel, "
        "each later stage at the previous stage's solution; the last stage's particles are the ones solved on."
    )
    seed: int = Field(0, ge=0, le=MAX_EXACT_INT, description="Seed of the sampler (not of the inputs).")

    @property
    def count(self) -> int:
        """Particles solved on (the closure's dimension)."""
        return self.nodes * self.chains * self.samples


class FiniteSampleSpec(_NetworkSpec):
    """The blog's self-consistency loop on an actual, seeded training set."""

    mode: Literal["finite_sample"] = Field(
        description="finite_sample: adaptive-kernel regression on P seeded Gaussian inputs, (b, c) from a least-"
        "squares projection of the mean residual."
    )
    D: int = Field(
        150,
        ge=1,
        le=MAX_EXACT_INT,
        description="Input dimension d (size of each input vector); the instance limit finite_sample_d caps it.",
    )
    P: int = Field(
        3000,
        ge=1,
        le=MAX_EXACT_INT,
        description="Number of training samples n; the cost is one P x P kernel and solve per evaluation. The "
        "instance limit finite_sample_p caps it (default 5000).",
    )
    P_test: int = Field(
        2000,
        ge=1,
        le=MAX_EXACT_INT,
        description="Fresh test inputs for the test error of the posterior mean; the instance limit "
        "finite_sample_p_test caps it.",
    )
    seed: int = Field(
        0,
        ge=0,
        le=MAX_EXACT_INT,
        description="Seed of the training and test inputs (numpy.random.default_rng(seed)): an integer in "
        "[0, 2^53 − 1], the range JSON numbers represent exactly.",
    )
    treatment: Literal["cavity", "tree_level", "tree_level_unreduced"] = Field(
        "cavity", description=FINITE_SAMPLE_TREATMENT
    )
    particles: ParticleSettings | None = Field(
        None,
        description="Sampler settings of treatment tree_level_unreduced (null: the defaults); refused with any "
        "other treatment.",
    )

    @field_validator("particles")
    @classmethod
    def _particles_need_the_unreduced_form(
        cls, particles: ParticleSettings | None, info: ValidationInfo
    ) -> ParticleSettings | None:
        if particles is not None and info.data.get("treatment") != "tree_level_unreduced":
            raise ValueError(
                "particles set the sampler of treatment tree_level_unreduced; no other treatment uses them"
            )
        return particles

    @property
    def particle_settings(self) -> ParticleSettings:
        return self.particles or ParticleSettings()


RubinCavitySpec = Annotated[PotentialSpec | SelfConsistentSpec | FiniteSampleSpec, Field(discriminator="mode")]
