"""The quantities of ``matrix_denoising`` (extensive-rank denoising of S̃ = WᵀDW/√(kd), or of X = AB/√k)."""

from __future__ import annotations

from solvers.theories.quantities import Quantity, table

P = ("parameters",)

QUANTITIES = table(
    Quantity("snr", r"$\lambda$", "signal-to-noise ratio of the channel Y = √λ S̃ + Z", P),
    Quantity("gamma", r"$\gamma$", "width ratio γ = k/d", P),
    Quantity("eta", r"$\eta$", "row ratio η = rows/d of the rectangular X", P),
    Quantity("overlap", "$m_S$", "overlap m_S(λ) of the Bayes-optimal estimator with the signal",
             ("order_parameters", "observables")),
    Quantity("mmse", r"$\mathrm{mmse}_S$", "minimum mean squared error, 1 − m_S"),
    Quantity("iota", r"$\iota$", "mutual information per d² (symmetric: 4ι' = mmse; rectangular: per ηd², 2ι' = mmse)"),
    Quantity("overlap_integral", "$M$", "M(λ) = ∫₀^λ m_S(t) dt"),
    headline="mmse",
)
