"""Validated input of the ``mean_field_ard`` theory (Göring, Mingard, Nam, Louis 2025).

Network f(x) = N^{-γ} Σ_i a_i φ(w_iᵀx), priors w_i ~ N(0, (σ_w²/d) I_d), a_i ~ N(0, σ_a²), likelihood
exp[−(1/(2κ²)) · (1/P) Σ_μ (y_μ − f(x_μ))²]. Every physical range is checked here, so bad input is a
422 naming the offending field. Sizes (d, N, P, P_test, array rows, particles) are not capped here:
the theory declares them (``MeanFieldARDTheory.sizes``) and the service checks them against the
instance's limits.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationInfo, field_validator, model_validator

from solvers.theories.mean_field_ard.activations import ActivationName

_CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

#: Highest Hermite degree of a single-index target: the fixed Gauss–Hermite rules used for its
#: population averages (64 nodes, exact for polynomials of degree ≤ 127) then integrate
#: He_l(z)·He_m(z)·(smooth) to round-off.
MAX_HERMITE_DEGREE = 24
#: Largest |coefficient| of a target (keeps y² and the residual far from overflow).
MAX_COEFFICIENT = 1e6
#: The reduced solver's central-limit treatment of the irrelevant coordinates needs this many of them.
MIN_IRRELEVANT = 4


class ParityTarget(BaseModel):
    """y = Π_{i ≤ k} x_i on x uniform on {±1}^d."""

    model_config = _CONFIG

    kind: Literal["parity"] = Field(description="k-sparse parity on the hypercube.")
    k: int = Field(ge=1, description="Order of the parity: y = x_1 x_2 ⋯ x_k (1 ≤ k ≤ d).")


class SingleIndexTarget(BaseModel):
    """y = Σ_l c_l He_l(z), z = x_1, on Gaussian x ~ N(0, I_d) (probabilists' Hermite, E He_l² = l!)."""

    model_config = _CONFIG

    kind: Literal["single_index"] = Field(description="Single-index target on Gaussian inputs.")
    hermite: dict[str, float] = Field(
        description="Hermite coefficients {degree: c_l} of y = Σ_l c_l He_l(x_1); degrees 0…24, "
        "e.g. {\"1\": 1, \"3\": -0.3} for He1 − 0.3 He3 (He3 = z³ − 3z)."
    )

    @field_validator("hermite")
    @classmethod
    def _coefficients(cls, h: dict[str, float]) -> dict[str, float]:
        if not h:
            raise ValueError("the Hermite expansion is empty: give at least one {degree: coefficient}")
        for key, c in h.items():
            if not key.isdigit():
                raise ValueError(f"Hermite degree {key!r} is not a non-negative integer")
            if int(key) > MAX_HERMITE_DEGREE:
                raise ValueError(
                    f"Hermite degree {key} exceeds {MAX_HERMITE_DEGREE}, the highest the fixed Gauss–Hermite "
                    "rules resolve"
                )
            if not math.isfinite(c) or abs(c) > MAX_COEFFICIENT:
                raise ValueError(
                    f"Hermite coefficient of degree {key} is not representable (|c| ≤ {MAX_COEFFICIENT:g})"
                )
        if all(c == 0.0 for c in h.values()):
            raise ValueError("all Hermite coefficients are zero: the target carries no signal")
        return h

    @property
    def coefficients(self) -> dict[int, float]:
        return {int(k): float(v) for k, v in self.hermite.items() if v != 0.0}

    @property
    def degree(self) -> int:
        return max(self.coefficients)


class GeneratedData(BaseModel):
    """Inputs drawn from the target's input law with ``numpy.random.default_rng(seed)`` (training, then test)."""

    model_config = _CONFIG

    seed: int = Field(0, ge=0, le=2**32 - 1, description="Seed of the training and test inputs.")
    P_test: int = Field(4000, ge=1, description="Number of held-out test inputs.")


class ArraysData(BaseModel):
    """Inline data: rows of X are inputs x_μ ∈ R^d, y their labels."""

    model_config = _CONFIG

    kind: Literal["arrays"] = Field(description="Inline arrays.")
    X: list[list[float]] = Field(description="Training inputs, P rows of d numbers.")
    y: list[float] = Field(description="Training labels y_μ, one per row of X.")
    X_test: list[list[float]] = Field(description="Test inputs, rows of d numbers (at least one).")
    y_test: list[float] = Field(description="Test labels, one per row of X_test.")

    @field_validator("X", "X_test")
    @classmethod
    def _rows(cls, X: list[list[float]], info: ValidationInfo) -> list[list[float]]:
        if not X:
            raise ValueError(f"{info.field_name} is empty: need at least one input")
        d = len(X[0])
        if d == 0:
            raise ValueError(f"rows of {info.field_name} are empty: need d ≥ 1")
        if any(len(row) != d for row in X):
            raise ValueError(f"rows of {info.field_name} must all have the same length d")
        if info.field_name == "X_test":
            X0 = info.data.get("X")
            if X0 and len(X0[0]) != d:
                raise ValueError(f"rows of X_test have {d} columns but rows of X have {len(X0[0])}")
        return X

    @field_validator("y", "y_test")
    @classmethod
    def _labels(cls, y: list[float], info: ValidationInfo) -> list[float]:
        rows = info.data.get("X" if info.field_name == "y" else "X_test")
        if rows is not None and len(y) != len(rows):
            raise ValueError(f"{info.field_name} has {len(y)} labels but there are {len(rows)} input rows")
        return y


#: per_unit needs a Student-t prior with a variance (shape α₀ > 1): the ARD mechanism is about second moments.
PER_UNIT_MIN_ALPHA0 = 1.0
#: The reduced solver's bulk rule reaches |w_S| ≤ 6|w_⊥| (``wells.BULK_V_MAX``); a Student-t relevant weight with
#: fewer degrees of freedom than 2·3 puts too much of its second moment beyond it (prior ⟨w_S²⟩ integrated to
#: 1.3e-4 at α₀ = 3, 6e-3 at α₀ = 2).
REDUCED_PER_UNIT_MIN_ALPHA0 = 3.0


class ARDSpec(BaseModel):
    """Gamma(α₀, β₀) hyperprior on the per-coordinate prior precisions ρ_j of MF-ARD."""

    model_config = _CONFIG

    precisions: Literal["shared", "per_unit"] = Field(
        "shared",
        description="Which precisions the hyperprior is on. shared: one ρ_j per input coordinate, shared by the N "
        "hidden units (classic ARD of a network's inputs, MacKay/Neal): d order parameters ρ_j, each unit one "
        "observation, ρ_j = (α₀ + N/2)/(β₀ + N⟨w_j²⟩/2), so α₀ weighs against N/2. per_unit: every unit has its own "
        "precision vector with the Gamma(α₀, β₀) hyperprior, integrated out exactly in the mean-field limit: each "
        "weight has a Student-t prior (2α₀ degrees of freedom, scale √(β₀/α₀)), α₀ weighs against ½, and the "
        "mean-field problem is convex again (one solution, no first-order transition). Needs alpha0 > 1 (a prior "
        "with a variance). See docs/theories/mean_field_ard.md, 'The two ARD readings'.",
    )
    alpha0: float = Field(4.0, gt=0, description="Shape α₀ of the Gamma hyperprior (the paper: 4 for parity, 0.1 "
                          "for the single-index teacher).")
    beta0: float | None = Field(
        None, gt=0, description="Rate β₀; null gives β₀ = α₀ σ_w²/d, whose mean α₀/β₀ is the isotropic d/σ_w² "
        "(per_unit: the Student-t weight then has variance β₀/(α₀ − 1) = (σ_w²/d)·α₀/(α₀ − 1))."
    )
    ema: float = Field(0.5, gt=0, le=1, description="Particle iteration: weight of the (Newton-like) precision step "
                       "per outer step (the EMA of Algorithm 1; shared precisions only).")
    update: Literal["mean", "map"] = Field(
        "mean", description="Shared precisions' fixed point: posterior mean (α₀ + N/2)/(β₀ + N⟨w_j²⟩/2), or its mode "
        "(α₀ − 1 + N/2 …)."
    )

    @model_validator(mode="after")
    def _map_shape(self) -> ARDSpec:
        if self.update == "map" and self.alpha0 <= 1.0:
            raise ValueError("the MAP update needs alpha0 > 1 (the Gamma mode is at 0 otherwise)")
        if self.precisions == "per_unit":
            if self.alpha0 <= PER_UNIT_MIN_ALPHA0:
                raise ValueError("precisions 'per_unit' needs alpha0 > 1: each weight's prior is then a Student-t "
                                 "with 2·alpha0 degrees of freedom, which has no variance for alpha0 ≤ 1")
            if self.update != "mean":
                raise ValueError("precisions 'per_unit' integrates each unit's precisions out exactly; 'update' "
                                 "(the point estimate of a shared precision) applies to 'shared' only")
        return self


class ParticleSpec(BaseModel):
    """The particle solver (BlackJAX MALA over a population of single-neuron weights)."""

    model_config = _CONFIG

    n: int = Field(1024, ge=8, description="Number of particles (independent MALA chains).")
    inner_steps: int = Field(200, ge=1, description="MALA steps per outer iteration.")
    average_steps: int = Field(50, ge=1, description="Last inner steps of each outer iteration averaged into f̄.")
    outer_iterations: int = Field(100, ge=1, description="Budget of outer (residual) iterations.")
    warmup: int = Field(500, ge=0, description="MALA steps that tune the step size before the first outer iteration.")
    anderson_memory: int = Field(3, ge=0, le=10, description="Anderson history on f̄ (0: plain Robbins–Monro).")
    tol: float = Field(1e-3, gt=0, description="Convergence: rms undamped residual of f̄ ≤ tol + 3 × its Monte-Carlo "
                       "error (mean of the last Robbins–Monro steps).")
    tol_log_rho: float = Field(1e-2, gt=0, description="MF-ARD: the same test for log ρ_new − log ρ.")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Seed of the particle streams (common random numbers).")


class QuadratureSpec(BaseModel):
    """Orders of the reduced solver's fixed rules (defaults: see the theory's docs)."""

    model_config = _CONFIG

    bulk: int = Field(20, ge=5, le=60, description="Nodes per relevant coordinate of the bulk rule (multiple of 5).")
    bulk_q: int = Field(6, ge=2, le=40, description="Gauss–Laguerre nodes in |w_⊥|² per bulk node.")
    aligned: int = Field(7, ge=3, le=15, description="Gauss–Hermite nodes per axis of an aligned well.")
    bulk_per_unit: int = Field(
        40, ge=5, le=60, description="Nodes per relevant coordinate of the bulk rule under per-unit ARD precisions "
        "(replaces bulk; its u-rule is a sinh-trapezoid of about 30 nodes per v). The Student-t law needs the finer "
        "grid: at 20 its λ_S is 0.5 % off a brute-force grid (k = 2), at 40 1e-4. At k = 4 the default is 3.7·10⁶ "
        "nodes: lower it (20: 2.7·10⁵).")


def _data_kind(v: Any) -> str:
    kind = v.get("kind") if isinstance(v, dict) else getattr(v, "kind", None)
    return "arrays" if kind == "arrays" else "generated"


Target = Annotated[ParityTarget | SingleIndexTarget, Field(discriminator="kind")]
Data = Annotated[
    Annotated[ArraysData, Tag("arrays")] | Annotated[GeneratedData, Tag("generated")], Discriminator(_data_kind)
]


class MeanFieldARDSpec(BaseModel):
    """Mean-field theory of a two-layer network's posterior, plain (mf) or with ARD feature selection (mf_ard)."""

    model_config = _CONFIG

    theory: Literal["mean_field_ard"] = Field(description="Theory name.")
    model: Literal["mf", "mf_ard"] = Field("mf", description="Plain MF (isotropic prior) or MF with ARD precisions.")
    activation: ActivationName = Field("relu", description="φ: relu, erf or tanh.")
    d: int = Field(ge=1, description="Input dimension.")
    N: int = Field(ge=1, description="Width (number of hidden units).")
    gamma: float = Field(0.5, gt=0, le=2, description="Width exponent: f = N^{-γ} Σ a_i φ(w_iᵀx).")
    kappa: float = Field(gt=0, description="Noise κ: likelihood exp[−(1/(2κ²)) mean_μ (y − f)²]; SGLD temperature 2κ².")
    sigma_w2: float = Field(1.0, gt=0, description="Input-weight prior variance scale: w ~ N(0, σ_w²/d).")
    sigma_a2: float = Field(1.0, gt=0, description="Readout prior variance: a ~ N(0, σ_a²).")
    P: int | None = Field(
        None, ge=1, description="Training-set size; null is the population limit P → ∞ (generated data only). "
        "With inline arrays it must be null or their row count."
    )
    target: Target = Field(description="The target function and its input law.")
    data: Data = Field(default_factory=GeneratedData, description="Generated ({seed, P_test}) or inline arrays.")
    ard: ARDSpec | None = Field(None, description="Hyperprior of mf_ard and which precisions it is on (defaults "
                                "when null: shared, α₀ = 4).")
    solver: Literal["reduced", "particles"] = Field(
        "reduced",
        description="reduced: deterministic quadrature of the reduced law (parity, ReLU, population limit or "
        "large P); particles: BlackJAX MALA population on the actual data (any data).",
    )
    particles: ParticleSpec = Field(default_factory=ParticleSpec)
    quadrature: QuadratureSpec = Field(default_factory=QuadratureSpec)
    seed_asymmetry: float = Field(
        0.05, gt=0, lt=1, description="Aligned start: relevant prior precision (ARD) or weight scale times this."
    )

    @field_validator("target")
    @classmethod
    def _target_fits(cls, target: Any, info: ValidationInfo) -> Any:
        d = info.data.get("d")
        if isinstance(target, ParityTarget) and d is not None and target.k > d:
            raise ValueError(f"a parity of order k = {target.k} needs k ≤ d = {d}")
        return target

    @model_validator(mode="after")
    def _consistent(self) -> MeanFieldARDSpec:
        if isinstance(self.data, ArraysData):
            rows, cols = len(self.data.X), len(self.data.X[0])
            if cols != self.d:
                raise ValueError(f"data.X has {cols} columns but d = {self.d}")
            if self.P is not None and rows != self.P:
                raise ValueError(f"P = {self.P} but data.X has {rows} rows (give P = null or the row count)")
        if self.solver == "reduced":
            if not isinstance(self.target, ParityTarget):
                raise ValueError("solver 'reduced' is implemented for the parity target; use solver 'particles'")
            if self.activation != "relu":
                raise ValueError("solver 'reduced' needs activation 'relu' (its bulk rule uses ReLU's homogeneity); "
                                 "use solver 'particles'")
            if isinstance(self.data, ArraysData):
                raise ValueError("solver 'reduced' works on the input law, not on inline arrays; use 'particles'")
            if self.d - self.target.k < MIN_IRRELEVANT:
                raise ValueError(f"solver 'reduced' needs d − k ≥ {MIN_IRRELEVANT} irrelevant coordinates (central "
                                 "limit for their sum); use 'particles'")
            a = self.ard_settings
            if self.model == "mf_ard" and a.precisions == "per_unit" and a.alpha0 < REDUCED_PER_UNIT_MIN_ALPHA0:
                raise ValueError(f"solver 'reduced' with ard.precisions 'per_unit' needs ard.alpha0 ≥ "
                                 f"{REDUCED_PER_UNIT_MIN_ALPHA0:g} (its bulk rule would lose the heavier Student-t "
                                 "tail of the relevant weights); use solver 'particles'")
        elif self.P is None and not isinstance(self.data, ArraysData):
            raise ValueError("solver 'particles' needs data: give P (generated inputs) or inline arrays")
        return self

    # ---- derived ----------------------------------------------------------------------------------
    @property
    def n_train(self) -> int | None:
        if isinstance(self.data, ArraysData):
            return len(self.data.X)
        return self.P

    @property
    def ard_settings(self) -> ARDSpec:
        return self.ard if self.ard is not None else ARDSpec()

    @property
    def beta0(self) -> float:
        b = self.ard_settings.beta0
        return b if b is not None else self.ard_settings.alpha0 * self.sigma_w2 / self.d
