"""Validated input of the ``matrix_denoising`` theory."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

Readout = Literal["ones", "rademacher", "gaussian", "uniform", "four_point"]


class MatrixDenoisingSpec(BaseModel):
    """Extensive-rank denoising. Symmetric (default): Y = √λ S̃ + Z, S̃ = W^T diag(v) W/√(k d), Z ~ GOE
    (semicircle on [−2, 2]). Rectangular: Y = √λ X + Z, X = A B/√k of shape (ηd) × d, Z iid N(0, 1)."""

    # strict: a boolean or a numeric string is not a number here (lax mode would read false as 0).
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    theory: Literal["matrix_denoising"] = Field(description="Theory name.")
    shape: Literal["symmetric", "rectangular"] = Field(
        "symmetric",
        description="symmetric: S̃ = W^T diag(v) W/√(kd) observed through GOE noise (4ι' = mmse); rectangular: "
        "X = A B/√k ((ηd) × d, inner dimension k = γd, iid unit-variance A, B) observed through iid N(0, 1) "
        "noise (2ι' = mmse), the product-matrix channel of two-hidden-layer networks.",
    )
    gamma: float = Field(
        ge=1e-3,
        le=1e3,
        description="Width ratio γ = k/d (dimensionless), 1e-3 ≤ γ ≤ 1e3: the inner dimension k of S̃ = W^T D W "
        "(rank γd for γ < 1) or of X = A B/√k.",
    )
    readout: Readout = Field(
        "ones",
        description="Readout law P_v of the diagonal of S̃ = W^T diag(v) W/√(kd), all with E v² = 1: "
        "ones (v = 1), rademacher (±1), gaussian (N(0,1)), uniform (U[−√3, √3]), four_point ({±1, ±3}/√5). "
        "Symmetric shape only (the rectangular channel has no readout law).",
    )
    snr: float = Field(
        ge=0,
        le=1e8,
        description="Signal-to-noise ratio λ of the channel Y = √λ S̃ + Z (dimensionless, 0 ≤ λ ≤ 1e8; the noise "
        "Z has the semicircle law on [−2, 2] and S̃ unit spectral variance), or of Y = √λ X + Z (unit entry "
        "variances).",
    )
    eta: float | None = Field(
        None,
        validate_default=True,
        description="Rectangular shape only (required there): row ratio η = rows/d of X, 1e-3 ≤ η ≤ 1e3 "
        "(η = γ2·P_v(v) for the rows of a readout class in a two-hidden-layer network).",
    )

    @field_validator("readout")
    @classmethod
    def _readout_only_symmetric(cls, readout: str, info: ValidationInfo) -> str:
        if info.data.get("shape") == "rectangular" and readout != "ones":
            raise ValueError("the rectangular channel X = A B/√k has no readout law: leave readout out")
        return readout

    @field_validator("eta")
    @classmethod
    def _eta_for_shape(cls, eta: float | None, info: ValidationInfo) -> float | None:
        shape = info.data.get("shape", "symmetric")
        if shape == "rectangular":
            if eta is None:
                raise ValueError("the rectangular shape needs eta = rows/d of X")
            if not 1e-3 <= eta <= 1e3:
                raise ValueError(f"eta must be in [1e-3, 1e3] (got {eta})")
        elif eta is not None:
            raise ValueError("eta applies to the rectangular shape only")
        return eta
