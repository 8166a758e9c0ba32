"""Problems whose solution sets are known independently of the engine, for deflation and deflated continuation."""

from __future__ import annotations

import numpy as np
from numpy.polynomial import chebyshev

from solvers.core.problem import Problem


def chebyshev_problem(n: int, start: float = 0.3) -> Problem:
    """T_n(x) = 0 on the real line: exactly n roots, cos((2k − 1)π / 2n), k = 1 … n."""
    coef = np.zeros(n + 1)
    coef[n] = 1.0
    dcoef = chebyshev.chebder(coef)
    return Problem(
        residual=lambda x, p: chebyshev.chebval(x, coef),
        jacobian=lambda x, p: np.array([[chebyshev.chebval(x[0], dcoef)]]),
        dim=1,
        starts=lambda p: {"start": np.array([start])},
        kind="saddle",
    )


def chebyshev_roots(n: int) -> np.ndarray:
    return np.sort(np.cos((2 * np.arange(1, n + 1) - 1) * np.pi / (2 * n)))


def unit_roots_problem(n: int) -> Problem:
    """z^n = 1 written in (Re z, Im z): exactly n real solutions, (cos 2πk/n, sin 2πk/n), k = 0 … n − 1."""

    def residual(x: np.ndarray, p: float) -> np.ndarray:
        w = complex(x[0], x[1]) ** n - 1.0
        return np.array([w.real, w.imag])

    def jacobian(x: np.ndarray, p: float) -> np.ndarray:
        d = n * complex(x[0], x[1]) ** (n - 1)  # Cauchy–Riemann: [[Re d, −Im d], [Im d, Re d]]
        return np.array([[d.real, -d.imag], [d.imag, d.real]])

    return Problem(residual=residual, jacobian=jacobian, dim=2,
                   starts=lambda p: {"start": np.array([0.6, 0.2])}, kind="saddle")


def isola_problem() -> Problem:
    """(x² + (p − 2)² − 1)(x − 3) = 0: the line x = 3 for every p and, apart from it, the circle
    x² + (p − 2)² = 1 (p ∈ [1, 3]), which no continuation of the line reaches."""

    def residual(x: np.ndarray, p: float) -> np.ndarray:
        return np.array([(x[0] ** 2 + (p - 2) ** 2 - 1) * (x[0] - 3)])

    def jacobian(x: np.ndarray, p: float) -> np.ndarray:
        return np.array([[2 * x[0] * (x[0] - 3) + x[0] ** 2 + (p - 2) ** 2 - 1]])

    return Problem(residual=residual, jacobian=jacobian, dim=1, starts=lambda p: {"line": np.array([3.0])},
                   kind="saddle", label=lambda x, p, s: "line" if abs(x[0] - 3) < 1e-6 else "circle")


def carrier_problem(eps: float, n: int = 401) -> Problem:
    """Carrier's problem ε² y'' + 2(1 − x²) y + y² = 1, y(±1) = 0, by second-order finite differences on n points;
    the unknowns are the n − 2 interior values. Start: y = 0 (Bender & Orszag's outer solution is ≈ x² − 1)."""
    x = np.linspace(-1.0, 1.0, n)[1:-1]
    h = 2.0 / (n - 1)
    m = n - 2
    lap = (np.diag(np.full(m, -2.0)) + np.diag(np.ones(m - 1), 1) + np.diag(np.ones(m - 1), -1)) / h**2
    a = 2 * (1 - x**2)

    def residual(y: np.ndarray, p: float) -> np.ndarray:
        return eps**2 * (lap @ y) + a * y + y**2 - 1.0

    def jacobian(y: np.ndarray, p: float) -> np.ndarray:
        return eps**2 * lap + np.diag(a + 2 * y)

    return Problem(residual=residual, jacobian=jacobian, dim=m, starts=lambda p: {"zero": np.zeros(m)},
                   kind="saddle", scale=np.ones(m))


def carrier_shooting_count(eps: float, slopes: np.ndarray, steps: int = 8000) -> int:
    """Solutions of Carrier's problem counted by shooting (independent of any Newton and of the finite-difference
    grid): y(−1) = 0, y'(−1) = s, integrated to x = 1 by classical Runge–Kutta for all slopes at once; each sign
    change of y(1; s) over ``slopes`` is one solution. A trajectory below y = −50 is frozen there: y'' ≤ (1 − y²)/ε²
    + 2|y|/ε² then drives it to −∞ before x = 1, so its sign is settled (one above +50 is not: it turns back)."""
    h = 2.0 / steps
    y, v = np.zeros(len(slopes)), np.asarray(slopes, dtype=float).copy()

    def acc(t: float, y: np.ndarray) -> np.ndarray:
        return (1 - y**2 - 2 * (1 - t**2) * y) / eps**2

    t = -1.0
    for _ in range(steps):
        live = y > -50
        k1y, k1v = v, acc(t, y)
        k2y, k2v = v + h / 2 * k1v, acc(t + h / 2, y + h / 2 * k1y)
        k3y, k3v = v + h / 2 * k2v, acc(t + h / 2, y + h / 2 * k2y)
        k4y, k4v = v + h * k3v, acc(t + h, y + h * k3y)
        y = np.where(live, y + h / 6 * (k1y + 2 * k2y + 2 * k3y + k4y), y)
        v = np.where(live, v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v), v)
        t += h
    return int(np.sum(np.sign(y[1:]) != np.sign(y[:-1])))


def nested_pitchforks() -> Problem:
    """F = (x (x² − p), y (y² + 1 − x²)), a gradient system with two levels of pitchforks, in closed form:

    - the trivial branch (0, 0) loses stability at p = 0, where the branch A: x² = p, y = 0 bifurcates (one curve,
      the parabola through the origin);
    - A loses stability at x² = 1 (p = 1), at (±1, 0): there the branches B±: x = ±√p, y² = p − 1 bifurcate (two
      curves, one per sign of x); they have no branch point of their own.

    Depth 0: 1 curve; depth 1: 2 curves, 1 branch point (p = 0); depth 2: 4 curves, 3 branch points (p = 0, 1, 1).
    """

    def residual(z: np.ndarray, p: float) -> np.ndarray:
        x, y = z
        return np.array([x * (x * x - p), y * (y * y + 1 - x * x)])

    def jacobian(z: np.ndarray, p: float) -> np.ndarray:
        x, y = z
        return np.array([[3 * x * x - p, 0.0], [-2 * x * y, 3 * y * y + 1 - x * x]])

    return Problem(residual=residual, jacobian=jacobian, dim=2, starts=lambda p: {"trivial": np.zeros(2)},
                   kind="gradient", label=lambda z, p, s: _pitchfork_label(z))


def _pitchfork_label(z: np.ndarray) -> str:
    x, y = (abs(float(v)) > 1e-7 for v in z)
    return "B" if y else ("A" if x else "trivial")
