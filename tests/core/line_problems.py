"""Two-parameter problems with closed-form transition lines, for the line tracers."""

from __future__ import annotations

import numpy as np

from solvers.core.problem import Event, Problem


def cusp() -> Problem:
    """Stationary points of V(x) = x⁴/4 − a x²/2 + λ x: x³ − a x + λ = 0, λ = (a, λ).

    Folds where 3x² = a: λ = ±2 (a/3)^(3/2), meeting in the cusp a = λ = 0. Equal depth of the two
    wells ±√a (by the symmetry x → −x, λ → −λ) on λ = 0 for a > 0.
    """

    def label(x: np.ndarray, lam: np.ndarray, start: str) -> str:
        if 3 * x[0] ** 2 - lam[0] < 0:
            return "barrier"
        return "left" if x[0] < 0 else "right"

    return Problem(
        residual=lambda x, lam: x**3 - lam[0] * x + lam[1],
        dim=1,
        free_entropy=lambda x, lam: float(-(x[0] ** 4 / 4 - lam[0] * x[0] ** 2 / 2 + lam[1] * x[0])),
        stability=lambda x, lam: float(3 * x[0] ** 2 - lam[0]),
        starts=lambda lam: {"left": np.array([-1.5]), "barrier": np.array([0.0]), "right": np.array([1.5])},
        label=label,
        parameters=("a", "lambda"),
    )


def curie_weiss_free_entropy(m: float, beta: float, h: float) -> float:
    """φ(m; β, h) = −β m²/2 + log 2cosh(β(m + h)): the mean-field Ising free entropy per spin.

    From Z = Σ_σ exp(β/(2N) (Σσ)² + βh Σσ) by the Hubbard–Stratonovich transform in m; its
    stationary points dφ/dm = β (tanh(β(m + h)) − m) = 0 are the Curie–Weiss equation, and at them
    φ equals the Landau form β m²/2 + β h m + H(m), H the binary entropy (tested).
    """
    y = beta * (m + h)
    return float(-beta * m * m / 2 + np.logaddexp(y, -y))


def curie_weiss_field() -> Problem:
    """m = tanh(β(m + h)) with λ = (β, h); the margin is dF/dm = 1 − β sech²(β(m + h)) (> 0 stable)."""

    def label(x: np.ndarray, lam: np.ndarray, start: str) -> str:
        if 1 - lam[0] / np.cosh(lam[0] * (x[0] + lam[1])) ** 2 < 0:
            return "unstable"
        return "up" if x[0] > 0 else "down"

    return Problem(
        residual=lambda x, lam: x - np.tanh(lam[0] * (x + lam[1])),
        dim=1,
        free_entropy=lambda x, lam: curie_weiss_free_entropy(float(x[0]), float(lam[0]), float(lam[1])),
        stability=lambda x, lam: float(1 - lam[0] / np.cosh(lam[0] * (x[0] + lam[1])) ** 2),
        starts=lambda lam: {"up": np.array([0.95]), "down": np.array([-0.95]), "zero": np.array([0.0])},
        label=label,
        parameters=("beta", "h"),
    )


def event_toy() -> Problem:
    """x³ + x = λ2 (one solution everywhere) with the event g = x − λ1: zero on λ2 = λ1³ + λ1."""
    return Problem(
        residual=lambda x, lam: x**3 + x - lam[1],
        dim=1,
        stability=lambda x, lam: float(3 * x[0] ** 2 + 1),
        events=(Event("x_equals_lambda1", lambda x, lam: float(x[0] - lam[0])),),
        starts=lambda lam: {"root": np.array([0.0])},
        parameters=("lambda1", "lambda2"),
    )
