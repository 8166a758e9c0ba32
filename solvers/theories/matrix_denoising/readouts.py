"""Readout laws P_v of the matrix S̃ = W^T diag(v) W / sqrt(k d), and the transforms the spectrum needs.

Every law has E v² = 1. The spectral law of S̃ enters only through

    φ(a) = E_v[ v / (1 − a v) ],          φ'(a) = E_v[ v² / (1 − a v)² ],

because the R-transform of √λ·S̃ is R_A(s) = c·φ(c s/γ) with c = √(γλ) (generalised Marchenko–Pastur:
X = W^T D_v W / k has R_X(s) = E_v[v/(1 − v s/γ)], and S̃ = √γ X). φ is evaluated at complex a with
Im a ≤ 0, the side on which the physical Stieltjes transform lives (G(x + i0) has Im G ≤ 0); on the real
axis the value returned is the limit from that side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import wofz

ReadoutName = Literal["ones", "rademacher", "gaussian", "uniform", "four_point"]
READOUTS: tuple[str, ...] = ("ones", "rademacher", "gaussian", "uniform", "four_point")

SQRT3 = np.sqrt(3.0)


@dataclass(frozen=True)
class ReadoutLaw:
    """One readout distribution P_v (unit second moment)."""

    name: str
    #: Atoms and weights of a discrete law (None for a continuous one).
    atoms: tuple[float, ...] | None
    weights: tuple[float, ...] | None
    #: Bound on |v| used to bound the spectrum; for the Gaussian, a cut beyond which P_v < 1e-23.
    v_min: float
    v_max: float

    # ---- moments ------------------------------------------------------------------------------
    def moment(self, n: int) -> float:
        """E v^n."""
        if self.atoms is not None:
            a = np.asarray(self.atoms)
            return float(np.dot(self.weights, a**n))
        if n % 2:
            return 0.0
        m = n // 2
        if self.name == "uniform":
            return 3.0**m / (2 * m + 1)
        # Gaussian: (2m − 1)!!
        return float(np.prod(np.arange(1, 2 * m, 2, dtype=float))) if m else 1.0

    @property
    def mean(self) -> float:
        return self.moment(1)

    # ---- φ and φ' --------------------------------------------------------------------------------
    def phi(self, a: np.ndarray) -> np.ndarray:
        """E[v / (1 − a v)] at complex ``a`` (Im a ≤ 0 side)."""
        return self._phi(np.asarray(a, dtype=complex))[0]

    def phi_and_derivative(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(φ(a), φ'(a)) at complex ``a``."""
        return self._phi(np.asarray(a, dtype=complex))

    def _phi(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.atoms is not None:
            return self._phi_discrete(a)
        if self.name == "uniform":
            return _phi_uniform(a)
        return _phi_gaussian(a)

    def _phi_discrete(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.name == "ones":
            inv = 1.0 / (1.0 - a)
            return inv, inv * inv
        # The other discrete laws are symmetric: the atoms ±v (weight p each) combine into 2p a v²/(1 − a²v²).
        a2 = a * a
        f = np.zeros_like(a)
        df = np.zeros_like(a)
        for v, p in zip(self.atoms, self.weights, strict=True):
            if v <= 0:
                continue
            v2 = v * v
            inv = 1.0 / (1.0 - a2 * v2)
            f += (2.0 * p * v2) * inv
            df += (2.0 * p * v2) * (1.0 + a2 * v2) * inv * inv
        return f * a, df


def _phi_uniform(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """v ~ U[−√3, √3]: closed form with logarithms, power series near a = 0 (where the closed form cancels)."""
    f = np.empty_like(a)
    df = np.empty_like(a)
    small = np.abs(a) < 0.2
    if np.any(small):
        s = a[small]
        s2 = s * s
        acc_f = np.zeros_like(s)
        acc_df = np.zeros_like(s)
        power = np.ones_like(s)  # a^{2m}
        for m in range(24):
            c = 3.0 ** (m + 1) / (2 * m + 3)  # E v^{2m+2}
            acc_f += c * power * s
            acc_df += (2 * m + 1) * c * power
            power = power * s2
        f[small] = acc_f
        df[small] = acc_df
    big = ~small
    if np.any(big):
        b = a[big]
        # On the real axis beyond |a| = 1/√3 the logarithms sit on their cuts; take the boundary values from
        # Im a < 0 (arg −π for 1 + √3a, +π for 1 − √3a) whatever the sign of the zero imaginary part.
        u_plus = 1.0 + SQRT3 * b
        u_minus = 1.0 - SQRT3 * b
        arg_plus = np.where((u_plus.imag == 0) & (u_plus.real < 0), -np.pi, np.angle(u_plus))
        arg_minus = np.where((u_minus.imag == 0) & (u_minus.real < 0), np.pi, np.angle(u_minus))
        log_plus = np.log(np.abs(u_plus)) + 1j * arg_plus
        log_minus = np.log(np.abs(u_minus)) + 1j * arg_minus
        L = log_plus - log_minus
        f[big] = -1.0 / b + L / (2.0 * SQRT3 * b * b)
        df[big] = 1.0 / b**2 - L / (SQRT3 * b**3) + 1.0 / (b * b * (1.0 - 3.0 * b * b))
    return f, df


def _gaussian_stieltjes(w: np.ndarray) -> np.ndarray:
    """E[1/(w − v)], v ~ N(0, 1), continued from Im w > 0 (entire in w through the Faddeeva function)."""
    return -1j * np.sqrt(np.pi / 2.0) * wofz(w / np.sqrt(2.0))


def _phi_gaussian(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """v ~ N(0, 1): through g(w) = E[1/(w − v)] at w = 1/a; the moment series E v^{2m+2} = (2m+1)!! for small |a|."""
    f = np.empty_like(a)
    df = np.empty_like(a)
    # The closed form cancels like ε·|w|² (w = 1/a); the asymptotic series, truncated at 24 terms, is accurate
    # to ~1e-16 for |a| < 0.1. The two agree to ~1e-14 at the switch.
    small = np.abs(a) < 0.1
    if np.any(small):
        s = a[small]
        s2 = s * s
        acc_f = np.zeros_like(s)
        acc_df = np.zeros_like(s)
        power = np.ones_like(s)
        dfact = 1.0  # (2m+1)!!
        for m in range(24):
            acc_f += dfact * power * s
            acc_df += (2 * m + 1) * dfact * power
            power = power * s2
            dfact *= 2 * m + 3
        f[small] = acc_f
        df[small] = acc_df
    big = ~small
    if np.any(big):
        w = 1.0 / a[big]
        g = _gaussian_stieltjes(w)
        # E[v/(1 − a v)] = w (w g − 1);  E[v²/(1 − a v)²] = w² (1 − 2 w g − w² + w³ g)  (Stein: g' = 1 − w g).
        f[big] = w * (w * g - 1.0)
        df[big] = w * w * (1.0 - 2.0 * w * g - w * w + w**3 * g)
    return f, df


_FOUR = (-3.0 / np.sqrt(5.0), -1.0 / np.sqrt(5.0), 1.0 / np.sqrt(5.0), 3.0 / np.sqrt(5.0))

LAWS: dict[str, ReadoutLaw] = {
    "ones": ReadoutLaw("ones", (1.0,), (1.0,), 1.0, 1.0),
    "rademacher": ReadoutLaw("rademacher", (-1.0, 1.0), (0.5, 0.5), -1.0, 1.0),
    "four_point": ReadoutLaw("four_point", _FOUR, (0.25, 0.25, 0.25, 0.25), _FOUR[0], _FOUR[-1]),
    "uniform": ReadoutLaw("uniform", None, None, -SQRT3, SQRT3),
    "gaussian": ReadoutLaw("gaussian", None, None, -10.0, 10.0),
}


def law(name: str) -> ReadoutLaw:
    try:
        return LAWS[name]
    except KeyError:
        raise ValueError(f"unknown readout {name!r}; expected one of {READOUTS}") from None


def sample(name: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """Draws from P_v (used by Monte Carlo checks)."""
    lw = law(name)
    if lw.atoms is not None:
        return rng.choice(np.asarray(lw.atoms), size=size, p=np.asarray(lw.weights))
    if name == "uniform":
        return rng.uniform(-SQRT3, SQRT3, size=size)
    return rng.standard_normal(size)
