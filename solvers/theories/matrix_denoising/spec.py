"""Validated input of the ``matrix_denoising`` theory."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Readout = Literal["ones", "rademacher", "gaussian", "uniform", "four_point"]


class MatrixDenoisingSpec(BaseModel):
    """Extensive-rank symmetric denoising Y = √λ S̃ + Z, S̃ = W^T diag(v) W/√(k d), Z ~ GOE (semicircle on [−2, 2])."""

    # strict: a boolean or a numeric string is not a number here (lax mode would read false as 0).
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    theory: Literal["matrix_denoising"] = Field(description="Theory name.")
    gamma: float = Field(
        ge=1e-3,
        le=1e3,
        description="Width ratio γ = k/d of the k×d weight matrix W (dimensionless), 1e-3 ≤ γ ≤ 1e3. "
        "For γ < 1 S̃ has rank γd.",
    )
    readout: Readout = Field(
        "ones",
        description="Readout law P_v of the diagonal of S̃ = W^T diag(v) W/√(kd), all with E v² = 1: "
        "ones (v = 1), rademacher (±1), gaussian (N(0,1)), uniform (U[−√3, √3]), four_point ({±1, ±3}/√5).",
    )
    snr: float = Field(
        ge=0,
        le=1e8,
        description="Signal-to-noise ratio λ of the channel Y = √λ S̃ + Z (dimensionless, 0 ≤ λ ≤ 1e8; the noise "
        "Z has the semicircle law on [−2, 2] and S̃ unit spectral variance).",
    )
