"""mmse_X(λ) of rectangular extensive-rank denoising at one SNR, from the singular values of the observation.

Channel Y = √λ X + Z, X = A B/√k ((ηd) × d, rank min(k, ηd, d), unit entry variance), Z iid N(0, 1);
mmse_X(λ) = lim (1/(ηd²)) E‖X − E[X|Y]‖² (so mmse_X(0) = 1).

For bi-rotationally invariant X the optimal estimator is rotation-invariant (Troiani et al. 2022): it keeps
the singular vectors of Y and shrinks each singular value s of Ŷ = Y/(MP)^{1/4} (noise variance Δ = 1 in
those units, see :mod:`.rectangular_spectrum`) to

    ξ(s) = s − (2/√R₁) [Re G_μ(s) + (R₁ − 1)/(2s)],     G_μ(s) = s G(s²),

G_μ the Stieltjes transform of the symmetrised singular-value law μ, G that of ν (eigenvalues x = s² of
ŶŶᵀ). The estimate is the orthogonal projection of X on the span of the u_i v_iᵀ, so its error is
‖S‖² − Σ ξ(s_i)²; with E_ν x = √R₁(1 + λ) and the identity E_ν[x Re G] = 1/2 the expansion of ξ² collapses to

    mmse_X(λ) = (1/λ) [1 − Φ],      Φ = (4/R₁^{3/2}) E_ν[ x (Re G(x) + (R₁ − 1)/(2x))² ]          [derived]

(the rectangular free Fisher information; Φ = 1 without signal). A Gaussian X (k → ∞) gives Φ = 1/(1 + λ),
mmse = 1/(1 + λ) exactly. The bracket cancels as λ → 0, so, as in the symmetric case, the table uses the
small-λ series of :mod:`.rectangular_asymptotics` below its grid.

Quadrature in s = √x (μ is smooth at s = 0 when R₁ = 1, where ν ∝ x^{−1/2}): support intervals between
consecutive edge candidates (every edge is a critical value, see the spectrum module) where the density
at the midpoint is positive; each interval is split at its middle and both halves use s = e ± h t², which
turns the square-root edges into smooth integrands; 16-point Gauss–Legendre panels bisected until
parent and children agree to ``rel_tol``. The same nodes give ∫ν = 1, E_ν x = √R₁(1 + λ) and
E_ν[x Re G] = 1/2 as checks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from solvers.theories.matrix_denoising.rectangular_spectrum import RectangularSpectrum

NODES, WEIGHTS = np.polynomial.legendre.leggauss(16)
REGULAR, LEFT_EDGE, RIGHT_EDGE = 0, 1, 2
MAX_ROUNDS = 40
MAX_PANELS = 4000
#: A candidate interval is in the support when the density at its midpoint exceeds this (relative to the
#: density scale 1/√(E x)).
SUPPORT_TOL = 1e-12


@dataclass(frozen=True)
class RectangularPoint:
    """mmse_X at one λ with the checks of the same quadrature (field names shared with the symmetric points)."""

    lam: float
    mmse: float
    fisher: float  # Φ
    mass_error: float  # ∫ν − 1
    mean_error: float  # E_ν x − √R₁(1 + λ), relative
    second_moment_error: float  # E_ν[x Re G] − 1/2
    converged: bool
    evaluations: int
    intervals: int
    seconds: float

    @property
    def overlap(self) -> float:
        return 1.0 - self.mmse

    @property
    def ok(self) -> bool:
        return (
            self.converged
            and abs(self.mass_error) < 1e-9
            and abs(self.mean_error) < 1e-9
            and abs(self.second_moment_error) < 1e-8
        )


def _panel_nodes(a: np.ndarray, b: np.ndarray, kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = 0.5 * (NODES + 1.0)
    w = 0.5 * WEIGHTS
    h = (b - a)[:, None]
    s = a[:, None] + h * t[None, :]
    ws = h * w[None, :] * np.ones_like(s)
    left = kind == LEFT_EDGE
    if left.any():
        s[left] = a[left, None] + h[left] * t[None, :] ** 2
        ws[left] = h[left] * (2.0 * t * w)[None, :]
    right = kind == RIGHT_EDGE
    if right.any():
        s[right] = b[right, None] - h[right] * t[None, :] ** 2
        ws[right] = h[right] * (2.0 * t * w)[None, :]
    return s, ws


def _panel_values(sp: RectangularSpectrum, a: np.ndarray, b: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """Per panel: [J, ∫ν, E x, E x Re G] with J = E_ν[x (Re G + (R₁ − 1)/(2x))²]."""
    s, ws = _panel_nodes(a, b, kind)
    x = s * s
    G = sp.stieltjes(x.ravel()).reshape(x.shape)
    nu = np.maximum(-G.imag, 0.0) / np.pi
    dens = ws * 2.0 * s * nu  # ν(x) dx = 2 s ν(s²) ds
    half_gap = 0.5 * (sp.R1 - 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        shifted = np.where(x > 0, G.real + half_gap / x, 0.0)
    return np.stack([(dens * x * shifted**2).sum(1), dens.sum(1), (dens * x).sum(1), (dens * x * G.real).sum(1)],
                    axis=1)


def support_intervals(sp: RectangularSpectrum) -> list[tuple[float, float]]:
    """Intervals (in s) where the singular-value density is positive."""
    top = sp.singular_value_bound()
    edges = np.sqrt(sp.edge_candidates())
    cuts = np.unique(np.concatenate([[0.0], edges[edges < top], [top]]))
    mids = 0.5 * (cuts[:-1] + cuts[1:])
    nu = sp.density(mids * mids) * 2.0 * mids
    scale = 1.0 / np.sqrt(sp.mean)
    inside = nu > SUPPORT_TOL * scale
    return [(float(a), float(b)) for a, b, keep in zip(cuts[:-1], cuts[1:], inside, strict=True) if keep]


def _integrate(sp: RectangularSpectrum, rel_tol: float) -> tuple[np.ndarray, bool, int, int]:
    intervals = support_intervals(sp)
    a = np.array([lo for lo, hi in intervals for _ in (0, 1)])
    b = np.array([hi for lo, hi in intervals for _ in (0, 1)])
    mid = 0.5 * (a + b)
    left = np.arange(a.size) % 2 == 0
    a, b = np.where(left, a, mid), np.where(left, mid, b)
    kind = np.where(left, LEFT_EDGE, RIGHT_EDGE)
    vals = _panel_values(sp, a, b, kind)
    evaluations = vals.shape[0] * NODES.size
    total = vals.sum(0)
    accepted = np.zeros(4)
    converged = True
    for round_ in range(MAX_ROUNDS):
        if a.size == 0:
            break
        m = 0.5 * (a + b)
        kind_l = np.where(kind == RIGHT_EDGE, REGULAR, kind)
        kind_r = np.where(kind == LEFT_EDGE, REGULAR, kind)
        both = _panel_values(sp, np.concatenate([a, m]), np.concatenate([m, b]), np.concatenate([kind_l, kind_r]))
        evaluations += both.shape[0] * NODES.size
        k = a.size
        children = both[:k] + both[k:]
        err = np.abs(children - vals)
        share = (b - a) / max(float(np.sum([hi - lo for lo, hi in intervals])), 1e-300)
        scale = np.abs(total) * share[:, None] + np.abs(children)
        ok = np.all(err <= rel_tol * scale + 1e-300, axis=1)
        if round_ == MAX_ROUNDS - 1 or 2 * a.size > MAX_PANELS:
            converged = bool(ok.all())
            ok[:] = True
        accepted += children[ok].sum(0)
        keep = ~ok
        a, b = np.concatenate([a[keep], m[keep]]), np.concatenate([m[keep], b[keep]])
        kind = np.concatenate([kind_l[keep], kind_r[keep]])
        vals = np.concatenate([both[:k][keep], both[k:][keep]])
        total = accepted + vals.sum(0)
    return accepted, converged, evaluations, len(intervals)


def rectangular_mmse_point(gamma: float, eta: float, lam: float, rel_tol: float = 1e-12) -> RectangularPoint:
    """mmse_X(λ) for inner ratio γ = k/d and row ratio η (λ = 0 gives exactly 1)."""
    t0 = time.perf_counter()
    if not lam >= 0:
        raise ValueError("lam must be >= 0")
    if lam == 0:
        return RectangularPoint(0.0, 1.0, 1.0, 0.0, 0.0, 0.0, True, 0, 1, 0.0)
    sp = RectangularSpectrum(float(gamma), float(eta), float(lam))
    (J, mass, mean, xg), converged, evaluations, intervals = _integrate(sp, rel_tol)
    fisher = 4.0 * J / sp.R1**1.5
    return RectangularPoint(
        lam=float(lam),
        mmse=float((1.0 - fisher) / lam),
        fisher=float(fisher),
        mass_error=float(mass - 1.0),
        mean_error=float(mean / sp.mean - 1.0),
        second_moment_error=float(xg - 0.5),
        converged=converged,
        evaluations=evaluations,
        intervals=intervals,
        seconds=time.perf_counter() - t0,
    )


def rectangular_mmse_points(
    gamma: float, eta: float, lams: np.ndarray, rel_tol: float = 1e-12
) -> list[RectangularPoint]:
    return [rectangular_mmse_point(gamma, eta, float(lam), rel_tol) for lam in np.asarray(lams, dtype=float).ravel()]
