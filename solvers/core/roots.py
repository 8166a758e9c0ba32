"""A scalar root with the bracket the root finder ended with, so that a refined point can say how well it is known.

Brent's method and bisection keep a bracket [a, b] with f(a) f(b) < 0 and stop when it is narrower than the
tolerance; they return one end. Every value they asked for is remembered here, and the final bracket is the
nearest evaluated point on each side of the returned root where f has (strictly) the sign of that side's end
of the search interval (a continuous f has a zero between them). Its half of greater width is the uncertainty.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import bisect, brentq


@dataclass(frozen=True)
class Root:
    """``x`` with f(x) ≈ 0 and the final bracket [lo, hi] ∋ x of the search."""

    x: float
    lo: float
    hi: float

    @property
    def uncertainty(self) -> float:
        """Largest distance from ``x`` to a zero of f in the final bracket."""
        return max(self.x - self.lo, self.hi - self.x)


def final_bracket(x: float, evaluations: list[tuple[float, float]], lo: float, hi: float) -> Root:
    """The tightest bracket of the root ``x`` among ``evaluations`` (pairs (point, value)) of a search on [lo, hi]."""
    at = dict(evaluations)
    s_lo = np.sign(at[lo]) if at.get(lo) else -np.sign(at.get(hi) or 1.0)
    # Values of exactly 0 bound nothing (an indicator may return 0 where it cannot tell, and an evaluation
    # that lands on the zero still has its own error): only strictly signed values bracket.
    left = max((p for p, v in evaluations if p <= x and np.sign(v) == s_lo), default=lo)
    right = min((p for p, v in evaluations if p >= x and np.sign(v) == -s_lo), default=hi)
    return Root(float(x), float(min(left, x)), float(max(right, x)))


def bracketed_root(
    f: Callable[[float], float], lo: float, hi: float, *, smooth: bool = True, xtol: float, rtol: float,
    maxiter: int = 200, failures: tuple[type[BaseException], ...] = (), probe: bool = True,
) -> Root:
    """A zero of f in [lo, hi] (f(lo) f(hi) < 0) by Brent's method (``smooth``) or bisection, with its bracket.

    A search that stops on an exact zero (a linear f meets its root in one secant step) has no bracket of its
    own near it: f is then evaluated at the tolerance on either side, so that the bracket says what the
    tolerance does (``probe`` false: not, for a caller that needs the root and not how well it is known).
    ``failures``: exceptions of f that mean it cannot be evaluated at a point (such a probe is skipped). Raises
    what the root finder raises (ValueError without a sign change, RuntimeError without convergence) and whatever
    f raises during the search.
    """
    evaluations: list[tuple[float, float]] = []

    def g(p: float) -> float:
        v = float(f(p))
        evaluations.append((float(p), v))
        return v

    x = float((brentq if smooth else bisect)(g, lo, hi, xtol=xtol, rtol=rtol, maxiter=maxiter))
    root = final_bracket(x, evaluations, lo, hi)
    tol = xtol + rtol * abs(x)
    if probe and root.uncertainty > 2 * tol:
        for q in (max(lo, x - tol), min(hi, x + tol)):
            with contextlib.suppress(*failures):
                g(q)
        root = final_bracket(x, evaluations, lo, hi)
    return root
