"""What the ``matrix_denoising`` problem needs beyond its spec, and what it costs (no JAX here)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from solvers.theories.base import Sizes
from solvers.theories.matrix_denoising.spec import MatrixDenoisingSpec


class ExperimentSizes(BaseModel):
    """The finite size of the problem (the theory is the limit d → ∞ at fixed γ)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    d: int = Field(ge=2, le=2000, description="Dimension d of S̃ (d × d); W is k × d with k = round(γ d).")


def rank(spec: MatrixDenoisingSpec, d: int) -> int:
    return max(1, round(spec.gamma * d))


def estimator_sizes(spec: MatrixDenoisingSpec, sizes: ExperimentSizes) -> dict[str, int]:
    """Components of each per-draw estimator of ``experiment.build_target``'s network."""
    return {"mmse": 1, "overlap": 1}


def check(spec: MatrixDenoisingSpec, sizes: ExperimentSizes) -> Sizes:
    """The sampled entries of W, and the d × d observation held, both set by d."""
    d = sizes.d
    return {
        "experiment_parameters": (("sizes", "d"), float(rank(spec, d) * d)),
        "experiment_data": (("sizes", "d"), float(d * d)),
        "experiment_draw_values": (("sizes", "d"), float(sum(estimator_sizes(spec, sizes).values()))),
    }
