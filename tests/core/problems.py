"""Problems with known answers, used to test the engine."""

from __future__ import annotations

import numpy as np

from solvers.core.problem import Problem


def curie_weiss() -> Problem:
    """m = tanh(beta m): pitchfork at beta = 1; p = beta.

    Action phi(m) = beta m^2 / 2 - log(2 cosh(beta m)); its gradient divided by beta is the residual.
    """

    def residual(x: np.ndarray, beta: float) -> np.ndarray:
        return x - np.tanh(beta * x)

    def jacobian(x: np.ndarray, beta: float) -> np.ndarray:
        return np.array([[1.0 - beta / np.cosh(beta * x[0]) ** 2]])

    def free_entropy(x: np.ndarray, beta: float) -> float:
        m = x[0]
        return float(-(beta * m * m / 2 - np.logaddexp(beta * m, -beta * m)))

    return Problem(
        residual=residual,
        dim=1,
        starts=lambda p: {"paramagnet": np.array([0.0]), "ferromagnet": np.array([0.9])},
        fixed_point=lambda x, beta: np.tanh(beta * x),
        jacobian=jacobian,
        free_entropy=free_entropy,
        kind="gradient",
        canonical=np.abs,
        label=lambda x, p, s: "paramagnet" if abs(x[0]) < 1e-7 else "ferromagnet",
    )


def tilted_double_well(lambda0: float = 0.0) -> Problem:
    """Stationary points of V(x) = x^4/4 - x^2/2 + (lam - lambda0) x: x^3 - x + (lam - lambda0) = 0.

    Folds at lam - lambda0 = +-2/(3 sqrt 3); the Maxwell (equal-depth) point is lam = lambda0.
    """

    def residual(x: np.ndarray, lam: float) -> np.ndarray:
        return x**3 - x + (lam - lambda0)

    def free_entropy(x: np.ndarray, lam: float) -> float:
        v = x[0]
        return float(-(v**4 / 4 - v**2 / 2 + (lam - lambda0) * v))

    def label(x: np.ndarray, lam: float, start: str) -> str:
        if 3 * x[0] ** 2 - 1 < 0:
            return "barrier"
        return "left" if x[0] < 0 else "right"

    return Problem(
        residual=residual,
        dim=1,
        starts=lambda p: {"left": np.array([-1.2]), "right": np.array([1.2])},
        jacobian=lambda x, lam: np.array([[3 * x[0] ** 2 - 1]]),
        free_entropy=free_entropy,
        kind="gradient",
        label=label,
    )


def contraction(dim: int = 4, seed: int = 0) -> Problem:
    """x = 0.5 tanh(M x + b): a contraction with a unique fixed point."""
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(dim, dim)) / np.sqrt(dim)
    b = rng.normal(size=dim)
    return Problem(
        residual=None,
        dim=dim,
        starts=lambda p: {"zero": np.zeros(dim)},
        fixed_point=lambda x, p: 0.5 * np.tanh(M @ x + b + p),
        kind="fixed_point",
    )
