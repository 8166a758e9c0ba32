"""What the ``hciz_mlp`` network needs beyond its spec, and what it costs (no JAX here).

The theory is the limit d → ∞ at fixed α = n/d² and widths γ_l = k_l/d; the network is the same
teacher–student problem at a finite input dimension d.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from solvers.theories.base import ExperimentRefused, Sizes
from solvers.theories.hciz_mlp.readouts import atoms
from solvers.theories.hciz_mlp.spec import HCIZSpec, NamedActivation

#: Readout laws with finitely many values of v²: the overlaps Q are reported per value (atom).
DISCRETE_READOUTS = ("ones", "rademacher", "four_point")


class ExperimentSizes(BaseModel):
    """The finite sizes of the network (the theory is the limit d → ∞ at fixed α, γ)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    d: int = Field(ge=2, le=2000, description="Input dimension d; widths k_l = round(γ_l d), n = round(α d²).")
    n_test: int = Field(1000, ge=1, le=100_000, description="Test inputs of the generalisation error.")


def widths(spec: HCIZSpec, d: int) -> list[int]:
    """[d, k_1, …, k_L] with k_l = round(γ_l d) (at least 1)."""
    return [d] + [max(1, round(g * d)) for g in spec.gammas]


def training_samples(spec: HCIZSpec, d: int) -> int:
    return max(1, round(spec.alpha * d * d))


def estimator_sizes(spec: HCIZSpec, sizes: ExperimentSizes) -> dict[str, int]:
    """Components of each per-draw estimator of ``experiment.build_target``'s network."""
    k = widths(spec, sizes.d)
    L, last = spec.depth, k[-1]
    per_atom = len(atoms(spec.readout).v2) if spec.readout in DISCRETE_READOUTS else 0
    out = {"generalization_error": 1, "train_mse": 1}
    if L == 2:
        out.update(M1=k[1] * k[1], M21=k[2] * k[2], W2=k[2] * k[1])
    if L == 1:
        out["R2"] = 1
        if per_atom:
            out["Q"] = per_atom
    else:
        out.update({f"Q_{l + 1}": 1 for l in range(L - 1)})
        if per_atom:
            out[f"Q_{L}"] = per_atom
    out.update(Q_weighted=1, Q_units=last, Q_matched=1)
    return out


def check(spec: HCIZSpec, sizes: ExperimentSizes) -> Sizes:
    """Refuse what cannot be sampled; the sampled weights and the inputs held, with their fields."""
    if spec.weight_prior != "gaussian":
        raise ExperimentRefused(("model", "weight_prior"), "the experiment samples Gaussian weights only (a "
                                "Rademacher prior is discrete; a continuous relaxation would be a different network)")
    if not spec.Delta > 0:
        raise ExperimentRefused(("model", "Delta"), "noiseless labels (Δ = 0) give a posterior supported on the "
                                "interpolating weights, which a sampler cannot explore; use Δ > 0")
    act = spec.activation
    name = act.name if isinstance(act, NamedActivation) else act
    if name == "sign":
        raise ExperimentRefused(("model", "activation"), "sign has zero derivative almost everywhere; "
                                "gradient-based samplers cannot sample its posterior")
    k = widths(spec, sizes.d)
    n = training_samples(spec, sizes.d)
    return {
        "experiment_parameters": (("sizes", "d"), float(sum(a * b for a, b in zip(k[1:], k[:-1], strict=True)))),
        "experiment_data": (("sizes", "d"), float((n + sizes.n_test) * sizes.d)),
        "experiment_draw_values": (("sizes", "d"), float(sum(estimator_sizes(spec, sizes).values()))),
    }
