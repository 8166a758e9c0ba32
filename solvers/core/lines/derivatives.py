"""Residuals and their derivatives in z = (x, λ), by the problem's Jacobian or finite differences.

All stencils are central. First derivatives use the fourth-order stencil
(−f(2h) + 8f(h) − 8f(−h) + f(−2h)) / 12h with h ~ ε^(1/5), which leaves an error near 1e-12
relative: fold and stability conditions are built from F_x, and their zero sets are only as
accurate as F_x is. Second and third directional derivatives (normal-form coefficients) use
fourth-order stencils too; the cheap 4-point mixed second derivative serves Jacobians of
augmented systems only, where it affects the corrector's speed, never the located point.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from solvers.core.errors import MAYBE_NUMERICAL, is_numerical
from solvers.core.problem import Problem

EPS = float(np.finfo(float).eps)
H1 = EPS ** (1 / 5)  # first derivatives, 4th order
H2 = EPS ** (1 / 6)  # second derivatives, 4th order
H3 = EPS ** (1 / 7)  # third derivatives, 4th order
HM = EPS ** (1 / 4)  # cheap mixed second derivatives, 2nd order



def _support_scale(z: np.ndarray, u: np.ndarray) -> float:
    """Step scale for a direction: the size of the components it moves (at least 1)."""
    moved = np.abs(z[u != 0])
    return max(1.0, float(moved.max())) if moved.size else 1.0


class Model:
    """F(x, λ) for λ a vector of ``m`` parameters, evaluated safely, with derivatives.

    ``F`` takes ``(x, lam)`` with ``lam`` an ndarray of shape (m,). A floating-point failure
    inside F (a numerical failure, :mod:`solvers.core.errors`) yields a NaN residual, which every corrector treats
    as a failed step.
    """

    def __init__(
        self,
        F: Callable[[np.ndarray, np.ndarray], np.ndarray],
        dim: int,
        n_params: int,
        jacobian: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    ):
        self._F = F
        self._jacobian = jacobian
        self.dim = dim
        self.m = n_params

    # ---- values ---------------------------------------------------------------------------
    def residual(self, x: np.ndarray, lam: np.ndarray) -> np.ndarray:
        try:
            f = np.asarray(self._F(np.asarray(x, dtype=float), np.asarray(lam, dtype=float)), dtype=float)
        except MAYBE_NUMERICAL as exc:
            if not is_numerical(exc):
                raise
            return np.full(self.dim, np.nan)
        if f.shape != (self.dim,):
            f = f.reshape(-1)
            if f.shape != (self.dim,):
                raise ValueError(f"the residual has {f.size} components, the problem declares dim = {self.dim}")
        return f

    def Fz(self, z: np.ndarray) -> np.ndarray:
        return self.residual(z[: self.dim], z[self.dim :])

    def split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return z[: self.dim], z[self.dim :]

    # ---- first derivatives ------------------------------------------------------------------
    def d1(self, z: np.ndarray, u: np.ndarray) -> np.ndarray:
        """DF(z)[u] (fourth-order stencil)."""
        h = H1 * _support_scale(z, u)
        f = self.Fz
        return (-f(z + 2 * h * u) + 8 * f(z + h * u) - 8 * f(z - h * u) + f(z - 2 * h * u)) / (12 * h)

    def jac_x(self, x: np.ndarray, lam: np.ndarray) -> np.ndarray:
        if self._jacobian is not None:
            try:
                J = np.asarray(self._jacobian(np.asarray(x, dtype=float), np.asarray(lam, dtype=float)), dtype=float)
            except MAYBE_NUMERICAL as exc:
                if not is_numerical(exc):
                    raise
                return np.full((self.dim, self.dim), np.nan)
            return J.reshape(self.dim, self.dim)
        z = np.concatenate([x, lam])
        cols = [self.d1(z, e) for e in np.eye(z.size)[: self.dim]]
        return np.column_stack(cols)

    def jac_lam(self, x: np.ndarray, lam: np.ndarray) -> np.ndarray:
        z = np.concatenate([x, lam])
        cols = [self.d1(z, e) for e in np.eye(z.size)[self.dim :]]
        return np.column_stack(cols)

    def jac_z(self, z: np.ndarray) -> np.ndarray:
        x, lam = self.split(z)
        return np.hstack([self.jac_x(x, lam), self.jac_lam(x, lam)])

    # ---- higher directional derivatives in z --------------------------------------------------
    def second(self, z: np.ndarray, u: np.ndarray) -> np.ndarray:
        """D²F(z)[u, u] (fourth-order stencil)."""
        nu = float(np.max(np.abs(u)))
        if nu == 0:
            return np.zeros(self.dim)
        d = u / nu
        h = H2 * _support_scale(z, d)
        f = self.Fz
        val = (-f(z + 2 * h * d) + 16 * f(z + h * d) - 30 * f(z) + 16 * f(z - h * d) - f(z - 2 * h * d)) / (12 * h * h)
        return val * nu * nu

    def mixed(self, z: np.ndarray, u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
        """D²F(z)[u1, u2] by polarisation of accurate second derivatives."""
        return (self.second(z, u1 + u2) - self.second(z, u1 - u2)) / 4.0

    def mixed_fast(self, z: np.ndarray, u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
        """D²F(z)[u1, u2] with the 4-point stencil (second order; for Jacobians of augmented systems)."""
        n1, n2 = float(np.max(np.abs(u1))), float(np.max(np.abs(u2)))
        if n1 == 0 or n2 == 0:
            return np.zeros(self.dim)
        d1, d2 = u1 / n1, u2 / n2
        h1, h2 = HM * _support_scale(z, d1), HM * _support_scale(z, d2)
        f = self.Fz
        a, b = h1 * d1, h2 * d2
        val = (f(z + a + b) - f(z + a - b) - f(z - a + b) + f(z - a - b)) / (4 * h1 * h2)
        return val * n1 * n2

    def dJv(self, z: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """D²F(z)[u, (v, 0)]: the derivative of F_x v along u (Jacobian rows of fold conditions)."""
        if self._jacobian is None:
            return self.mixed_fast(z, u, np.concatenate([v, np.zeros(self.m)]))
        nu = float(np.max(np.abs(u)))
        if nu == 0:
            return np.zeros(self.dim)
        d = u / nu
        h = H1 * _support_scale(z, d)
        n = self.dim

        def Jv(zz: np.ndarray) -> np.ndarray:
            return self.jac_x(zz[:n], zz[n:]) @ v

        val = (-Jv(z + 2 * h * d) + 8 * Jv(z + h * d) - 8 * Jv(z - h * d) + Jv(z - 2 * h * d)) / (12 * h)
        return val * nu

    def third(self, z: np.ndarray, u: np.ndarray) -> np.ndarray:
        """D³F(z)[u, u, u] (fourth-order stencil)."""
        nu = float(np.max(np.abs(u)))
        if nu == 0:
            return np.zeros(self.dim)
        d = u / nu
        h = H3 * _support_scale(z, d)
        f = self.Fz
        val = (
            -f(z + 3 * h * d) + 8 * f(z + 2 * h * d) - 13 * f(z + h * d)
            + 13 * f(z - h * d) - 8 * f(z - 2 * h * d) + f(z - 3 * h * d)
        ) / (8 * h**3)
        return val * nu**3


def scalar_gradient(fn: Callable[[np.ndarray], float], z: np.ndarray) -> np.ndarray:
    """Gradient of a scalar function of z (fourth-order central differences)."""
    g = np.empty(z.size)
    for k in range(z.size):
        e = np.zeros(z.size)
        e[k] = 1.0
        h = H1 * _support_scale(z, e)
        g[k] = (-fn(z + 2 * h * e) + 8 * fn(z + h * e) - 8 * fn(z - h * e) + fn(z - 2 * h * e)) / (12 * h)
    return g


def safe_scalar(fn: Callable[..., float], *args: object) -> float:
    """A scalar hook's value, NaN where it cannot be evaluated."""
    try:
        return float(fn(*args))
    except MAYBE_NUMERICAL as exc:
        if not is_numerical(exc):
            raise
        return float("nan")


def safe_margin(problem: Problem, x: np.ndarray, p: float) -> float:
    """The problem's stability margin at (x, p), NaN where it cannot be evaluated or the problem cannot tell."""
    try:
        m = problem.margin(x, p)
    except MAYBE_NUMERICAL as exc:
        if not is_numerical(exc):
            raise
        return float("nan")
    return float("nan") if m is None else float(m)


def model_of(problem: Problem) -> Model:
    """The ``Model`` of a problem, in its one or two parameters (λ an ndarray of shape (m,) either way)."""
    F, jac = problem.F, problem.jacobian
    if len(problem.parameters) == 1:
        return Model(lambda x, lam: F(x, float(lam[0])), problem.dim, 1,
                     None if jac is None else (lambda x, lam: jac(x, float(lam[0]))))
    return Model(F, problem.dim, 2, jac)
