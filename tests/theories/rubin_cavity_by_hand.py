"""The population tree level and its mean-field limit at D → ∞, written out from the equations with none of the
solver's code: scalar root finders on closed forms, for tests to compare the solver against.

Notation of the theory note (σ_w² = ½ unless given): h0 = 1 + 2σ_w², the reduced action

    Ŝ(ρ; b, c) = ρ²/(2σ_w²) − (2u/π) (s/h) (b − 2c s/h)²,   s = ρ²,  h = h0 + 2s,

the centre's curvature 2 F'(0) = 1/σ_w² − (4u/π) b²/h0 (+ κ V'(0) at tree level), and the closure
(I + M) [b, √6 c] = [1, √6 ε] with M = (1 − ω) η (4/π)/(h0 · 2F'(0)) e₁e₁ᵀ + ω η D A(ρ*),
A11 = (4/π) s/h, A13 = −8 s²/(√6 π h²), A33 = 8 s³/(3π h³) at the aligned well.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq, fsolve, minimize_scalar

SW2 = 0.5


def s_hat(rho: float, b: float, c: float, u: float, sw2: float = SW2) -> float:
    s = rho * rho
    h = 1.0 + 2.0 * (sw2 + s)
    return s / (2.0 * sw2) - (2.0 * u / math.pi) * s / h * (b - 2.0 * c * s / h) ** 2


def gfl_b(eta: float, u: float) -> float:
    """Mean field, GFL branch, σ_w² = ½ (theory note §4.2): b = 1/(1 + η/(π − u b²))."""
    top = min(1.0, math.sqrt(math.pi / u)) - 1e-12 if u > 0 else 1.0
    return brentq(lambda b: b * (1.0 + eta / (math.pi - u * b * b)) - 1.0, 1e-12, top, xtol=1e-16)


def centre_b(eta: float, kappa: float, u: float, sw2: float = SW2) -> float:
    """The tree level's GFL b: the centre Gaussian of exp{−D [s/(2σ_w²) − (2u/π) s b²/h0 + (κ/2) V(s)]} to first
    order in s, so D⟨ρ²⟩ = 1/(1/σ_w² − (4u/π) b²/h0 + κ V'(0)), M11 = η (4/π) D⟨ρ²⟩/h0, b = 1/(1 + M11), with
    V'(0) = v'(σ_w²) − ℓ11 (4/π)/h0 + ℓ⊥ (4/π) σ_w² · 2/h0² (v(q) = (2/π) arcsin(2q/(1 + 2q)); ℓ11 = 1 − b and
    ℓ⊥ = m⊥/(1 + m⊥), m⊥ = η (4/π) σ_w²/h0, learnabilities of the modes the centre's kernel has learnt). At κ = 0 it
    is :func:`gfl_b`, at u = 0 as well the NNGP predictor."""
    h = 1.0 + 2.0 * sw2
    v_prime = (2.0 / math.pi) * 2.0 / (h * math.sqrt(1.0 + 4.0 * sw2))
    m_perp = eta * (4.0 / math.pi) * sw2 / h
    l_perp = m_perp / (1.0 + m_perp)

    def curvature(b: float) -> float:
        V_prime = v_prime - (1.0 - b) * (4.0 / math.pi) / h + l_perp * (4.0 / math.pi) * sw2 * 2.0 / h**2
        return 1.0 / sw2 - (4.0 * u / math.pi) * b * b / h + kappa * V_prime

    top = 1.0 if curvature(1.0) > 0 else brentq(curvature, 1e-12, 1.0, xtol=1e-16)
    # b (1 + M11) = 1 with M11 = η (4/π)/(h · curvature): (1/b − 1) · curvature − η (4/π)/h = 0
    return brentq(lambda b: (1.0 / b - 1.0) * curvature(b) - eta * (4.0 / math.pi) / h, 1e-12, top, xtol=1e-16)


def side_well(b: float, c: float, u: float, sw2: float = SW2) -> tuple[float, float]:
    """(ρ*, Ŝ(ρ*)) of the aligned minimum: a bounded scan, then the root of dŜ/ds to round-off."""
    r0 = minimize_scalar(lambda r: s_hat(r, b, c, u, sw2), bounds=(0.2, 3.0), method="bounded").x
    h0 = 1.0 + 2.0 * sw2

    def slope(s: float) -> float:  # dŜ/ds
        h = h0 + 2.0 * s
        t = s / h
        return 1.0 / (2.0 * sw2) - (2.0 * u / math.pi) * (b - 2.0 * c * t) * (b - 6.0 * c * t) * h0 / h**2

    rho = math.sqrt(brentq(slope, (r0 - 0.05) ** 2, (r0 + 0.05) ** 2, xtol=1e-15))
    return rho, s_hat(rho, b, c, u, sw2)


def equal_depth_u(eta: float, eps: float, bracket: tuple[float, float]) -> float:
    """Mean field's first-order point: the u at which the side well of Ŝ(·; gfl_b, ε) is as deep as ρ = 0."""
    return brentq(lambda u: side_well(gfl_b(eta, u), eps, u)[1], *bracket, xtol=1e-13)


def spinodal_u(eta: float, eps: float, bracket: tuple[float, float]) -> float:
    """Mean field's spinodal: the u at which dŜ/dρ first touches zero at some ρ > 0 on the GFL branch."""

    def least_slope(u: float) -> float:
        b = gfl_b(eta, u)
        slope = lambda r: (s_hat(r + 1e-6, b, eps, u) - s_hat(r - 1e-6, b, eps, u)) / 2e-6  # noqa: E731
        return float(minimize_scalar(slope, bounds=(0.2, 3.0), method="bounded", options={"xatol": 1e-12}).fun)

    return brentq(least_slope, *bracket, xtol=1e-12)


def mean_field_mixture(eta: float, u: float, D: float, eps: float, start: tuple[float, float, float],
                       sw2: float = SW2) -> tuple[float, float, float, float]:
    """Mean field's GMFL-I state (b, c, ω, ρ*): the closure with the aligned well at equal depth, solved for
    (b, c, Ω = ω η D) from ``start`` = (b, c, ω)."""
    h0 = 1.0 + 2.0 * sw2

    def equations(x: np.ndarray) -> list[float]:
        b, c, big_omega = x
        omega = big_omega / (eta * D)
        rho, depth = side_well(b, c, u, sw2)
        s = rho * rho
        h = h0 + 2.0 * s
        a13 = -8.0 * s * s / (math.sqrt(6.0) * math.pi * h * h)
        A = np.array([[(4.0 / math.pi) * s / h, a13], [a13, 8.0 * s**3 / (3.0 * math.pi * h**3)]])
        M = big_omega * A
        M[0, 0] += (1.0 - omega) * eta * (4.0 / math.pi) / (h0 * (1.0 / sw2 - (4.0 * u / math.pi) * b * b / h0))
        new = np.linalg.solve(np.eye(2) + M, [1.0, math.sqrt(6.0) * eps])
        return [new[0] - b, new[1] / math.sqrt(6.0) - c, depth]

    x = fsolve(equations, [start[0], start[1], start[2] * eta * D], xtol=1e-13)
    assert max(abs(v) for v in equations(x)) < 1e-9
    return float(x[0]), float(x[1]), float(x[2] / (eta * D)), side_well(x[0], x[1], u, sw2)[0]
