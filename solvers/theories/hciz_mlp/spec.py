"""Validated input of the ``hciz_mlp`` theory (Barbier, Camilli, Nguyen, Pastore, Skerk).

Teacher and student share the architecture
``y = v·σ(W_L … σ(W_1 x/√d) … /√k_{L−1})/√k_L + √Δ z`` with x ~ N(0, I_d), n = α d² samples, hidden
widths k_l = γ_l d, iid unit-variance weights from ``weight_prior`` and known readouts v ~ P_v.
Every physical range is checked here, so bad input is a 422 naming the offending field. Sizes (the
depth, the length of a Hermite list) are not limited here: the theory declares them
(``HCIZTheory.sizes``) and the service checks them against the limits of its instance.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from solvers.theories.hciz_mlp.activations import NAMES, build
from solvers.theories.hciz_mlp.activations import Activation as ActivationModel
from solvers.theories.matrix_denoising.table import GAMMA_RANGE

_CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

ActivationName = Literal["relu", "tanh", "tanh2", "erf", "sign", "quadratic", "he2", "he3", "he2_he3", "elu"]
assert set(ActivationName.__args__) == set(NAMES)  # type: ignore[attr-defined]

#: Longest Hermite list that can be represented: g(q) = Σ μ_l² q^l / l! needs l! as a double (170! < 1.8e308 < 171!).
REPRESENTABLE_HERMITE = 171
#: Largest |μ_l|. With |μ_l| ≤ M every quantity the equations form from the coefficients is at most e·M²:
#: μ_l² /l! ≤ M², E σ² = Σ μ_l²/l! ≤ e M², and on |q| ≤ 1 also g(q) ≤ Σ M²/l!, g′(q) ≤ Σ l M²/l! = e M² and
#: g″(q) ≤ Σ l(l−1) M²/l! = e M². M = 1e50 keeps them below 3e100, so that even the product of two of them
#: with the other inputs (γ ≤ 1e3, the readout's v² ≤ 9/5) stays far inside double range (1.8e308).
HERMITE_MAX = 1e50
#: Smallest E σ² = Σ μ_l²/l!: below it σ is indistinguishable from zero next to any label noise, and the
#: squares of the coefficients underflow.
SECOND_MOMENT_MIN = 1e-100


class NamedActivation(BaseModel):
    """A named activation with optional transformations."""

    model_config = _CONFIG

    name: ActivationName = Field(
        description="relu, tanh, tanh2 = tanh(2x), erf, sign, quadratic = x², he2 = (x²−1)/√2, he3 = He3/√6 "
        "= (x³−3x)/√6, he2_he3 = He2/√2 + He3/6, elu."
    )
    remove_linear: bool = Field(False, description="Subtract the linear part μ1·x (μ1 = E[σ(z) z]).")
    unit_variance: bool = Field(False, description="Divide by √(E σ(z)²) after the other transformations.")


class HermiteActivation(BaseModel):
    """An activation given by its Hermite coefficients σ = Σ_l (μ_l / l!) He_l (probabilists')."""

    model_config = _CONFIG

    hermite: list[float] = Field(
        description="[μ0, μ1, μ2, …], μ_l = E[σ(z) He_l(z)], z ~ N(0, 1); each |μ_l| ≤ 1e50 (then μ_l², E σ² = "
        "Σ μ_l²/l! and g, g′, g″ on [−1, 1] are all ≤ e·1e100, so every quantity of the equations stays a finite "
        "double); E σ² ≥ 1e-100 (not numerically zero); at most 171 entries (l! must be a double) and at most "
        "the instance limit hciz_hermite_terms (default 40)."
    )

    @field_validator("hermite")
    @classmethod
    def _coefficients(cls, mu: list[float]) -> list[float]:
        if not mu:
            raise ValueError("the Hermite list is empty: give at least μ0")
        if len(mu) > REPRESENTABLE_HERMITE:
            raise ValueError(
                f"{len(mu)} Hermite coefficients: μ_l²/l! needs l! as a double, so at most {REPRESENTABLE_HERMITE}"
            )
        if not all(math.isfinite(m) for m in mu):
            raise ValueError("Hermite coefficients must be finite")
        if all(m == 0.0 for m in mu):
            raise ValueError("all Hermite coefficients are zero: σ ≡ 0 carries no signal")
        big = next((i for i, m in enumerate(mu) if abs(m) > HERMITE_MAX), None)
        if big is not None:
            raise ValueError(
                f"μ_{big} = {mu[big]:g} exceeds {HERMITE_MAX:g} in magnitude: the equations square the coefficients "
                f"and multiply their squares, which would leave double range"
            )
        second = math.fsum(m * m / math.factorial(i) for i, m in enumerate(mu))
        if second < SECOND_MOMENT_MIN:
            raise ValueError(
                f"E σ² = Σ μ_l²/l! = {second:g} is below {SECOND_MOMENT_MIN:g}: σ is numerically zero"
            )
        return mu


OneActivation = ActivationName | NamedActivation | HermiteActivation
Activation = Annotated[
    OneActivation | list[OneActivation],
    Field(
        description="Activation σ: a name, {name, remove_linear, unit_variance}, or {hermite: [μ0, μ1, …]}; for "
        "depth 2 also a list [σ₁, σ₂], one per hidden layer (both layers use σ when one is given)."
    ),
]
Prefactors = Literal["derived", "ones_notebook", "gauss_notebook"]


class HCIZSpec(BaseModel):
    """Bayes-optimal MLP near interpolation: replica-symmetric theory with HCIZ matrix integrals."""

    model_config = _CONFIG

    theory: Literal["hciz_mlp"] = Field(description="Theory name.")
    depth: int = Field(
        1, ge=1,
        description="Number of hidden layers L (at most the instance limit hciz_depth, default 12). L = 2 needs "
        "μ0 = μ2 = 0 in both layers and E σ₁² = 1 in the first (assumption H2; μ1 ≠ 0 solves the two-hidden-layer "
        "theory with the product overlap Q_2:1, e.g. {name: tanh2, unit_variance: true}); L ≥ 3 solves the reduced "
        "deep model, which needs μ0 = μ1 = μ2 = 0 and E σ² = 1 (e.g. {name: tanh2, remove_linear: true, "
        "unit_variance: true}).",
    )
    activation: Activation
    weight_prior: Literal["gaussian", "rademacher"] = Field(
        "gaussian", description="Prior P_W of the hidden weights (unit variance): N(0, 1) or ±1 with equal probability."
    )
    readout: Literal["ones", "rademacher", "gaussian", "uniform", "four_point"] = Field(
        "ones",
        description="Readout law P_v (E v² = 1, known to the student): ones v = 1; rademacher ±1; gaussian N(0, 1); "
        "uniform U[−√3, √3]; four_point {±1, ±3}/√5.",
    )
    gamma: float | list[float] = Field(
        description="Width ratio γ = k/d of the hidden layer(s), in [1e-3, 1e3] (the range of the tabulated "
        "matrix-denoising term): one number, or one per hidden layer (k_l = γ_l d)."
    )
    alpha: float = Field(ge=0, description="Sampling ratio α = n/d² (n training samples, input dimension d).")
    Delta: float = Field(
        ge=0, description="Label-noise variance Δ of y = f(x) + √Δ z; 0 is noiseless. ε* never includes Δ."
    )

    prefactors: Prefactors = Field(
        "derived",
        description="Depth 2: the form of two prefactors of the saddle-point equations. derived: from "
        "differentiating the free entropy (μ1² in Q̂_2:1, α/γ1 in Q̂_1); ones_notebook: ν1² (layer 2's μ1) in "
        "Q̂_2:1; gauss_notebook: α/γ2 in the second output-channel term of Q̂_1.",
    )
    quench: bool = Field(
        False,
        description="Depth 2: pin Q_1 ≡ 1 (the first layer given at the teacher's weights) to probe the partially "
        "specialised branches of the second layer; the free entropy then omits the first layer's entropy.",
    )

    @field_validator("activation")
    @classmethod
    def _activation_for_depth(cls, act: object, info: ValidationInfo) -> object:
        depth = info.data.get("depth", 1)
        if isinstance(act, list) and (depth != 2 or len(act) != 2):
            raise ValueError(f"a list of activations needs depth 2 and two entries (got depth {depth}, "
                             f"{len(act)} entries)")
        # One activation model per distinct σ (never one per layer: depth is not yet checked against its limit).
        layers = build_activations(act, 2) if depth == 2 else [build_activation(act)]
        if depth == 2:
            for layer, a in enumerate(layers, start=1):
                if max(abs(a.mu0), abs(a.mu2)) > 1e-8 or (layer == 1 and abs(a.second_moment - 1.0) > 1e-8):
                    raise ValueError(
                        f"depth 2 needs μ0 = μ2 = 0 in both layers and E σ₁² = 1 (assumption H2); layer {layer} "
                        f"has μ0 = {a.mu0:.4g}, μ1 = {a.mu1:.4g}, μ2 = {a.mu2:.4g}, E σ² = {a.second_moment:.4g}"
                    )
        elif depth >= 3:
            a = layers[0]
            lead = max(abs(a.mu0), abs(a.mu1), abs(a.mu2))
            if lead > 1e-8 or abs(a.second_moment - 1.0) > 1e-8:
                raise ValueError(
                    f"depth {depth} needs μ0 = μ1 = μ2 = 0 and E σ² = 1 (the reduced deep model); this activation "
                    f"has μ0 = {a.mu0:.4g}, μ1 = {a.mu1:.4g}, μ2 = {a.mu2:.4g}, E σ² = {a.second_moment:.4g}"
                )
        return act

    @field_validator("prefactors", "quench")
    @classmethod
    def _two_layer_options(cls, value: object, info: ValidationInfo) -> object:
        depth = info.data.get("depth", 1)
        default = "derived" if info.field_name == "prefactors" else False
        if depth != 2 and value != default:
            raise ValueError(f"{info.field_name} applies to depth 2 only (got depth {depth})")
        return value

    @field_validator("gamma")
    @classmethod
    def _gamma(cls, gamma: float | list[float], info: ValidationInfo) -> float | list[float]:
        values = gamma if isinstance(gamma, list) else [gamma]
        if not values:
            raise ValueError("gamma is an empty list: give one width ratio per hidden layer")
        for g in values:
            if not g > 0:
                raise ValueError(f"gamma must be > 0 (got {g})")
            # The denoising tables (and the spectra they integrate) are built on this range only.
            if not GAMMA_RANGE[0] <= g <= GAMMA_RANGE[1]:
                raise ValueError(f"gamma must be in [{GAMMA_RANGE[0]:g}, {GAMMA_RANGE[1]:g}] (got {g})")
        depth = info.data.get("depth", 1)
        if len(values) not in (1, depth):
            raise ValueError(f"{len(values)} width ratios for depth {depth}: give one per hidden layer (or one)")
        # At depth 2 the rows of a readout class form a (γ2·P(v²)d) × d product channel, tabulated on the same
        # range of ratios: the four_point law splits the second layer into two classes of half the rows.
        if depth == 2 and info.data.get("readout") == "four_point" and values[-1] / 2 < GAMMA_RANGE[0]:
            raise ValueError(f"gamma: with depth 2 and the four_point readout, γ2/2 (the row ratio of each readout "
                             f"class) must be at least {GAMMA_RANGE[0]:g} (got γ2 = {values[-1]})")
        return gamma

    @property
    def activations(self) -> list[ActivationModel]:
        """σ_l for l = 1..L."""
        return build_activations(self.activation, self.depth)

    @property
    def two_layer(self) -> bool:
        """Solved by the two-hidden-layer theory (depth 2 outside the reduced model, or quenched)."""
        if self.depth != 2:
            return False
        if self.quench:
            return True
        acts = self.activations
        reduced = all(max(abs(a.mu0), abs(a.mu1), abs(a.mu2)) <= 1e-8 and abs(a.second_moment - 1.0) <= 1e-8
                      for a in acts)
        return not (reduced and acts[0] == acts[1])

    @property
    def gammas(self) -> list[float]:
        """γ_l for l = 1..L (a single value is shared by all layers)."""
        values = self.gamma if isinstance(self.gamma, list) else [self.gamma]
        return values * self.depth if len(values) == 1 else list(values)


def build_activations(act: object, depth: int) -> list[ActivationModel]:
    """One numerical activation per hidden layer (a single activation is shared by all layers)."""
    if isinstance(act, list):
        return [build_activation(a) for a in act]
    return [build_activation(act)] * depth


def build_activation(act: object) -> ActivationModel:
    """The numerical activation of one entry of a spec's ``activation`` field."""
    if isinstance(act, HermiteActivation):
        return build(hermite=act.hermite)
    if isinstance(act, NamedActivation):
        return build(act.name, remove_linear=act.remove_linear, unit_variance=act.unit_variance)
    return build(str(act))
