"""The law of a sum of independent beta-prime variables, as a log-density on the log scale.

Under per-unit ARD each input weight has the prior w ~ N(0, 1/ρ), ρ ~ Gamma(α, β): a Student-t, and
B = w²/(2β) ~ BetaPrime(½, α), whose log x = log B has the density

    e^{G₁(x)},   G₁(x) = x/2 − (α + ½) log(1 + eˣ) − log B(½, α).

The reduced solver needs the law of |w_⊥|² = 2β Σ_j B_j over the d − k irrelevant coordinates, which has
no closed form. For independent X, Y > 0 with log-scale log-densities G_X, G_Y, the log-density of
log(X + Y) is (substituting X = S z, z = 1/(1 + e^{−l}))

    G_{X+Y}(s) = log ∫ exp[G_X(s − log(1 + e^{−l})) + G_Y(s − log(1 + e^{l}))] dl,

an integral over the whole line whose integrand decays exponentially at both ends; it is done by the
trapezoidal rule in τ with l = l* + L sinh τ (a smooth, rapidly decaying integrand: the rule converges
geometrically). Sums of n terms are built by doubling. Each log-density is kept on a uniform grid in x
(cubic spline) with its two exact asymptotes outside it:

* left (x → −∞): a density ~ a b^{p−1} near b = 0 gives G ≈ p x + log a; for a sum the exponents add and
  a = a_X a_Y Γ(p_X) Γ(p_Y)/Γ(p_X + p_Y) (for B₁: p = ½, a = 1/B(½, α));
* right (x → +∞): heavy tails add (one big jump): e^{G_{X+Y}} ≈ e^{G_X} + e^{G_Y} there.

Everything is on the log scale, so the far left tail (where the aligned wells of the reduced law sit,
|w_⊥|² many orders below its typical value) keeps its relative accuracy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.special import betaln, gammaln, logsumexp

#: Half-width of the tabulated range of x around the sum's typical log-size (the asymptotes serve beyond).
SPAN = 45.0
#: Grid step in x: at most this, and at most a tenth of the sum's relative width √(2/n).
MAX_STEP = 0.02
#: Trapezoidal step in τ and the reach of l = l* + L sinh τ.
TAU_STEP = 0.1
L_REACH = 150.0


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


@dataclass(frozen=True)
class LogScaleDensity:
    """G(x) = log density of log X, tabulated on a uniform grid with asymptotes outside it.

    ``terms``: the (shape α, count) of the BetaPrime(½, α) variables summed; ``p``/``log_a``: the left
    asymptote G ≈ p x + log a.
    """

    x: np.ndarray
    g: np.ndarray
    terms: tuple[tuple[float, int], ...]
    p: float
    log_a: float
    spline: CubicSpline = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "spline", CubicSpline(self.x, self.g))

    def right(self, x: np.ndarray) -> np.ndarray:
        """Right asymptote: log Σ_terms count · e^{G₁(x; α)}."""
        return logsumexp(np.stack([math.log(c) + single_log_density(a, x) for a, c in self.terms]), axis=0)

    def __call__(self, x: np.ndarray, nu: int = 0) -> np.ndarray:
        """G (nu = 0) or its first or second derivative at x (any shape)."""
        x = np.asarray(x, dtype=float)
        lo, hi = self.x[0], self.x[-1]
        inside = (x >= lo) & (x <= hi)
        out = np.empty_like(x)
        if np.any(inside):
            out[inside] = self.spline(x[inside], nu)
        left = x < lo
        if np.any(left):
            out[left] = self.p * x[left] + self.log_a if nu == 0 else (self.p if nu == 1 else 0.0)
        right = x > hi
        if np.any(right):
            xr = x[right]
            if nu == 0:
                out[right] = self.right(xr)
            else:
                h = 1e-4
                fp, f0, fm = self.right(xr + h), self.right(xr), self.right(xr - h)
                out[right] = (fp - fm) / (2 * h) if nu == 1 else (fp - 2 * f0 + fm) / h**2
        return out


def single_log_density(alpha: float, x: np.ndarray) -> np.ndarray:
    """G₁(x) of log B, B ~ BetaPrime(½, α)."""
    x = np.asarray(x, dtype=float)
    return 0.5 * x - (alpha + 0.5) * _softplus(x) - betaln(0.5, alpha)


def _count(d: LogScaleDensity) -> int:
    return sum(c for _, c in d.terms)


def _grid(n: int, centre: float) -> np.ndarray:
    step = min(MAX_STEP, 0.1 * math.sqrt(2.0 / n))
    m = math.ceil(SPAN / step)
    return centre + step * np.arange(-m, m + 1)


def single(alpha: float) -> LogScaleDensity:
    x = _grid(1, math.log(0.5 / alpha))
    return LogScaleDensity(x, single_log_density(alpha, x), ((alpha, 1),), 0.5, -float(betaln(0.5, alpha)))


def convolve(X: LogScaleDensity, Y: LogScaleDensity) -> LogScaleDensity:
    """The log-scale log-density of the sum of independent X and Y."""
    nx, ny = _count(X), _count(Y)
    n = nx + ny
    mean = sum(c * 0.5 / a for a, c in X.terms + Y.terms)  # Σ count/(2α): the typical size (median-like)
    s = _grid(n, math.log(mean))
    # the integrand peaks at z ≈ share of X (both in their left tails, and in the bulk): centre the map there
    lstar = math.log(nx / ny)
    width = min(1.0, 2.0 * math.sqrt(2.0 / min(nx, ny)))
    tau_max = math.asinh(L_REACH / width)
    tau = np.arange(-tau_max, tau_max + TAU_STEP / 2, TAU_STEP)
    l = lstar + width * np.sinh(tau)
    logw = np.log(TAU_STEP * width * np.cosh(tau))
    ax, ay = -_softplus(-l), -_softplus(l)  # log z, log(1 − z)
    g = np.empty_like(s)
    chunk = max(1, 400_000 // l.size)
    for i in range(0, s.size, chunk):
        si = s[i : i + chunk, None]
        g[i : i + chunk] = logsumexp(X(si + ax[None, :]) + Y(si + ay[None, :]) + logw[None, :], axis=1)
    p = X.p + Y.p
    log_a = X.log_a + Y.log_a + float(gammaln(X.p) + gammaln(Y.p) - gammaln(p))
    terms: dict[float, int] = {}
    for a, c in X.terms + Y.terms:
        terms[a] = terms.get(a, 0) + c
    return LogScaleDensity(s, g, tuple(sorted(terms.items())), p, log_a)


@lru_cache(maxsize=32)
def sum_density(alpha: float, n: int) -> LogScaleDensity:
    """The log-scale log-density of B_1 + … + B_n, B_j ~ BetaPrime(½, α) independent (binary doubling)."""
    if n < 1:
        raise ValueError("a sum needs at least one term")
    if n == 1:
        return single(alpha)
    half = sum_density(alpha, n // 2)
    out = convolve(half, half)
    return convolve(out, single(alpha)) if n % 2 else out


@lru_cache(maxsize=32)
def sum_density_one_shifted(alpha: float, n: int) -> LogScaleDensity:
    """The same with one term from BetaPrime(½, α + 1) instead: the tilted law of E[ρ_j | Σ B] (see
    :mod:`~solvers.theories.mean_field_ard.student_prior`)."""
    one = single(alpha + 1.0)
    return one if n == 1 else convolve(sum_density(alpha, n - 1), one)
