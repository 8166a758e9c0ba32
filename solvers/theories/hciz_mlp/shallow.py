"""Replica-symmetric saddle point of the shallow (one hidden layer) network: HCIZ + moment matching.

Order parameters on the atoms v_j of P_v (in v²), with α the control value when it is swept:

    T      = E_v[v² Q(v)²],            m_S(τ) = T                            (moment matching)
    R̂_2    = α μ2² / (Δ + ε)                                                (output channel)
    R_2    = R_d − mmse_S(τ + R̂_2),    R_d = 1 + γ v̄²                       (matrix denoising)
    ε_new  = (μ2²/2) mmse_S(τ + R̂_2) + g(1) − E_v[v² g(Q(v))]               (= K_d − K*)
    Q̂(v)   = (v² Q(v)/γ) [m_S(τ + R̂_2) − m_S(τ)] / m_S'(τ) + (α/γ) v² g'(Q(v)) / (Δ + ε)
    Q_new  = q_{P_W}(Q̂(v))

Unknowns x = [y(v_1), …, y(v_J), ε, t] with y = ln(1 + Q̂) the log-SNR of each atom's scalar channel
(Q = q_{P_W}(e^y − 1); y stays well scaled as Q → 1, where Q itself is compressed against 1) and
t = ln(1 + τ). Choosing ε rather than R̂_2 keeps every
component bounded (R̂_2 diverges at noiseless perfect recovery, ε goes to 0). τ is an unknown rather
than m_S^(-1)(T) so that no evaluation inverts the table; its component of the map is one Newton step on
ln mmse_S(τ) = ln(1 − T) in t, t ↦ t + [ln mmse_S(τ) − ln(1 − T)]·mmse_S(τ)/((1 + τ) m_S'(τ)), which has
the same fixed points, a derivative in t that vanishes there, and stays well conditioned at both ends
(mmse_S ≈ 1 − τ near 0 and ≈ c/τ at large τ make ln mmse_S nearly linear in t). 1 − T is formed from
the complements 1 − Q, computed without cancellation (binary weights reach 1 − Q ~ 1e-20). When μ2 = 0
there is no quadratic channel: the HCIZ term vanishes identically, τ drops out and x = [y, ε] (no table
is needed at all).

The RS free entropy (larger is preferred) is

    f = −½ ln(2πe(Δ + ε)) + (R_d − R_2) R̂_2/(4α) + (γ/α) E_v[ψ(Q̂) − Q Q̂/2] + [ι(τ) − ι(τ + R̂_2)]/α,

and the mutual information per hidden-layer weight is MI/(kd) = (α/γ)(−½ ln Δ − f − ½ ln 2πe).

Pure polynomial activations of degree ≤ 2 (g ≡ 0) with Gaussian weights are rotationally invariant:
Q is then pinned to 0 (x = [ε]), since the equations above would otherwise admit a spurious weak-Q root
(driven by the HCIZ term alone) that contradicts the exact result of Maillard et al.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.theories.hciz_mlp.activations import Activation
from solvers.theories.hciz_mlp.denoising import Denoiser
from solvers.theories.hciz_mlp.memo import StateMemo
from solvers.theories.hciz_mlp.priors import ScalarChannel
from solvers.theories.hciz_mlp.readouts import ReadoutAtoms

#: Below this max |Q| a solution is the universal branch.
UNIVERSAL_TOL = 1e-7
#: Largest overlap allowed in an iterate (Q = 1 means τ = ∞).
Q_MAX = 1.0 - 1e-13
#: Largest t = ln(1 + τ). τ ≈ c/(1 − T) exceeds 1e12 only when every overlap is within ~1e-12 of 1, where
#: the HCIZ term is already R̂_2 τ/(τ + R̂_2) ≈ R̂_2; τ is held there (the t-update is clamped alike).
T_MAX = float(np.log1p(1e12))
#: Noiseless solutions with ε below this are perfect recovery (their free entropy diverges).
PERFECT_RECOVERY_EPS = 1e-7
#: Smallest Δ + ε the map divides by. Noiseless perfect recovery (Δ = ε = 0) sends Q̂ to infinity; the floor keeps
#: 1/(Δ + ε)² — in the Jacobian — a finite double, so no NaN or Inf reaches a linear solver.
D_FLOOR = 1e-150
#: Relative step of the central difference giving m_S''(τ) from the table's m_S'.
DERIVATIVE_STEP = 1e-4
#: Evaluations remembered per model (the engine asks for F, the free entropy and the label at one x).


@dataclass
class ShallowState:
    """All intermediate quantities of one evaluation of the saddle-point map."""

    y: np.ndarray
    Q: np.ndarray
    eps: float
    T: float
    tau: float
    R2_hat: float
    mmse_total: float  # mmse_S(τ + R̂_2)
    R2: float
    Q_hat: np.ndarray
    hcz: float  # [m_S(τ + R̂_2) − m_S(τ)] / m_S'(τ)
    y_new: np.ndarray
    eps_new: float
    t_new: float
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ShallowModel:
    """One spec of the depth-1 theory with α free (it is the control value of sweeps)."""

    act: Activation
    channel: ScalarChannel
    readout: ReadoutAtoms
    gamma: float
    Delta: float
    denoiser: Denoiser
    memo: StateMemo = field(default_factory=StateMemo, compare=False, repr=False)

    # ---- layout ----------------------------------------------------------------------------
    @property
    def pinned(self) -> bool:
        """Q ≡ 0 by rotational invariance (g ≡ 0 and Gaussian weights)."""
        return (not self.act.has_higher_orders) and self.channel.prior == "gaussian"

    @property
    def has_tau(self) -> bool:
        """Whether t = ln(1 + τ) is an unknown (a quadratic channel and a non-pinned Q)."""
        return (not self.pinned) and self.act.mu2 != 0.0

    @property
    def n_q(self) -> int:
        return 0 if self.pinned else self.readout.size

    @property
    def dim(self) -> int:
        return self.n_q + 1 + int(self.has_tau)

    @property
    def R_d(self) -> float:
        return 1.0 + self.gamma * self.readout.mean**2

    @property
    def K_d(self) -> float:
        a = self.act
        return a.mu1**2 + a.mu2**2 * self.R_d / 2.0 + a.g1

    def split(self, x: np.ndarray) -> tuple[np.ndarray, float, float]:
        """(y per atom, ε, t)."""
        x = np.asarray(x, dtype=float)
        n = self.n_q
        y = x[:n] if n else np.zeros(self.readout.size)
        t = float(x[n + 1]) if self.has_tau else 0.0
        return y, float(x[n]), t

    def overlaps(self, x: np.ndarray) -> np.ndarray:
        """Q per atom of the solution vector x."""
        return np.minimum(self.channel.overlap_from_log(self.split(x)[0]), Q_MAX)

    def join(self, y: np.ndarray, eps: float, t: float = 0.0) -> np.ndarray:
        parts = [np.asarray(y, dtype=float)] if self.n_q else []
        parts.append(np.array([eps]))
        if self.has_tau:
            parts.append(np.array([t]))
        return np.concatenate(parts)

    # ---- the map ---------------------------------------------------------------------------
    def state(self, x: np.ndarray, alpha: float) -> ShallowState:
        return self.memo.get(x, alpha, self._state)

    def _state(self, x: np.ndarray, alpha: float) -> ShallowState:
        y, eps, t = self.split(x)
        Q = np.minimum(self.channel.overlap_from_log(y), Q_MAX)
        a, ro = self.act, self.readout
        v2, p = ro.v2, ro.p
        mu2sq = a.mu2**2
        D = self.Delta + eps
        T = float(np.dot(p, v2 * Q**2))
        comp = self.channel.complement_from_log(y)
        one_minus_T = float(np.dot(p, v2 * comp * (2.0 - comp)))  # E v² (1 − Q²), E v² = 1
        if mu2sq == 0.0:
            # No quadratic channel: R̂_2 = 0, the HCIZ term vanishes and mmse_S(τ) = 1 − T by moment matching.
            tau, R2_hat, mm_tau, mm_tot, dm_tau, t_new = float("nan"), 0.0, 1.0 - T, 1.0 - T, 1.0, t
        else:
            t = min(t, T_MAX)
            tau = float(np.expm1(t)) if self.has_tau else 0.0
            # s = 1/R̂_2, continued oddly to s < 0 (only probed by finite differences at Δ = ε = 0).
            drive = alpha * mu2sq  # 0 also when a positive α times μ2² underflows: no quadratic channel then
            s = D / drive if drive > 0 else float("inf")
            R2_hat = 0.0 if np.isinf(s) else (float("inf") if s == 0.0 else 1.0 / abs(s))
            mm = self.denoiser.mmse(np.array([tau, tau + R2_hat]))
            mm_tau, mm_tot = float(mm[0]), float(np.sign(s) * mm[1])
            # m_S' at τ, τ ± h (for m_S'' in the Jacobian) and τ + R̂_2, in one table call.
            h = DERIVATIVE_STEP * (1.0 + tau)
            dms = self.denoiser.dm(np.array([tau, tau - h, tau + h, tau + R2_hat if np.isfinite(R2_hat) else tau]))
            dm_tau = max(float(dms[0]), 1e-300)
            # One Newton step of ln mmse_S(τ) = ln(1 − T) in t = ln(1 + τ).
            K = mm_tau / ((1.0 + tau) * dm_tau)
            gap = np.log(mm_tau) - np.log(max(one_minus_T, 1e-300))
            t_new = min(t + gap * K, T_MAX) if self.has_tau else 0.0
        # [m_S(τ + R̂_2) − m_S(τ)] / m_S'(τ), written with mmse values (no cancellation as T → 1).
        hcz = (mm_tau - mm_tot) / dm_tau
        gq = a.g(Q)
        eps_new = 0.5 * mu2sq * mm_tot + a.g1 - float(np.dot(p, v2 * gq))
        if alpha > 0 and a.has_higher_orders:
            spec = (alpha / self.gamma) * v2 * a.dg(Q) / max(D, D_FLOOR)
        else:
            spec = np.zeros_like(Q)
        Q_hat = (v2 * Q / self.gamma) * hcz + spec
        y_new = self.channel.log_snr(Q_hat)
        return ShallowState(y, Q, eps, T, tau, R2_hat, mm_tot, self.R_d - mm_tot, Q_hat, hcz, y_new, eps_new, t_new,
                            {"mmse_tau": mm_tau, "dm_tau": dm_tau, "dms": dms if mu2sq else None,
                             "one_minus_T": one_minus_T})

    def fixed_point(self, x: np.ndarray, alpha: float) -> np.ndarray:
        st = self.state(x, alpha)
        return self.join(st.y_new, st.eps_new, st.t_new)

    def residual(self, x: np.ndarray, alpha: float) -> np.ndarray:
        return self.fixed_point(x, alpha) - np.asarray(x, dtype=float)

    def jacobian(self, x: np.ndarray, alpha: float) -> np.ndarray:
        """dG/dx of the fixed-point map, analytically (m_S'' by a central difference of the table's m_S')."""
        st = self.state(x, alpha)
        a, ro = self.act, self.readout
        v2, p = ro.v2, ro.p
        n = self.n_q
        mu2sq = a.mu2**2
        D = max(self.Delta + st.eps, D_FLOOR)
        J = np.zeros((self.dim, self.dim))
        iq, ie, it = slice(0, n), n, n + 1
        # ∂ mmse_S(τ + R̂_2) / ∂ε and the pieces that need m_S' at τ + R̂_2 and m_S'' at τ.
        if mu2sq == 0.0 or alpha <= 0.0:
            dmm_de, dm_tot, d2m_tau = 0.0, 0.0, 0.0
        else:
            tau, r = st.tau, st.R2_hat
            h = DERIVATIVE_STEP * (1.0 + tau)
            d = st.extras["dms"]
            d2m_tau = float(d[2] - d[1]) / (2 * h)
            if np.isfinite(r):
                dm_tot = float(d[3])
                dmm_de = dm_tot * r / D
            else:  # noiseless perfect recovery: mmse_S(τ + 1/s) ≈ c s, c = lim λ mmse_S(λ)
                dm_tot = 0.0
                big = 1e12
                dmm_de = float(self.denoiser.mmse(np.array([big]))[0]) * big / (alpha * mu2sq)
        dm_tau = st.extras["dm_tau"]
        dQ_dy = self.channel.d_overlap_from_log(st.y)
        # ε row
        J[ie, iq] = -p * v2 * a.dg(st.Q) * dQ_dy
        J[ie, ie] = 0.5 * mu2sq * dmm_de
        if self.has_tau:
            J[ie, it] = -0.5 * mu2sq * dm_tot * (1.0 + st.tau)
            # t row: one Newton step of ln mmse_S(τ) = ln(1 − T)
            tau, mm_tau = st.tau, st.extras["mmse_tau"]
            u = 1.0 / ((1.0 + tau) * dm_tau)
            K = mm_tau * u
            dK_dtau = -dm_tau * u - mm_tau * (dm_tau + (1.0 + tau) * d2m_tau) * u**2
            gap = np.log(mm_tau) - np.log(max(st.extras["one_minus_T"], 1e-300))
            if st.t_new < T_MAX:  # the clamped update is constant
                J[it, iq] = K * 2.0 * p * v2 * st.Q * dQ_dy / max(st.extras["one_minus_T"], 1e-300)
                J[it, it] = gap * dK_dtau * (1.0 + tau)
        if n:
            qp = self.channel.d_log_snr(st.Q_hat)
            # the same term as the map's (absent at α ≤ 0, which a wild corrector iterate can reach)
            drive = (alpha / self.gamma) * v2 / D if (alpha > 0 and a.has_higher_orders) else np.zeros_like(v2)
            diag = (v2 / self.gamma) * st.hcz + drive * a.d2g(st.Q)
            J[iq, iq] = np.diag(qp * diag * dQ_dy)
            dhcz_de = -dmm_de / dm_tau
            # d y_new/dε of the specialisation term, −q'(Q̂) Q̂_spec/D: the product q'(Q̂) Q̂_spec ≤ 1 is formed
            # before dividing by D, which is tiny near noiseless perfect recovery.
            J[iq, ie] = qp * (v2 * st.Q / self.gamma) * dhcz_de - (qp * drive * a.dg(st.Q)) / D
            if self.has_tau:
                dhcz_dtau = (dm_tot - dm_tau) / dm_tau - st.hcz * d2m_tau / dm_tau
                J[iq, it] = qp * (v2 * st.Q / self.gamma) * dhcz_dtau * (1.0 + st.tau)
        return J

    # ---- free entropy ----------------------------------------------------------------------
    def alpha_free_entropy_rest(self, st: ShallowState) -> float:
        """α·f + (α/2) ln(2πe(Δ + ε)): the prior, matrix and conjugate terms (finite at α = 0)."""
        ro = self.readout
        psi = self.channel.psi(st.Q_hat)
        scalar = self.gamma * ro.expect(psi - 0.5 * st.Q * st.Q_hat)
        if st.R2_hat == 0.0:
            return scalar  # ι(τ) − ι(τ + 0) = 0 and (R_d − R_2) R̂_2 = 0
        if np.isinf(st.R2_hat):
            return float("-inf")
        matrix = float(np.diff(self.denoiser.iota(np.array([st.tau + st.R2_hat, st.tau])))[0])
        return 0.25 * st.mmse_total * st.R2_hat + scalar + matrix

    def free_entropy(self, x: np.ndarray, alpha: float) -> float:
        """f_RS at the order parameters x (meaningful at a fixed point)."""
        if alpha <= 0.0:
            return float("nan")
        st = self.state(x, alpha)
        eps = max(st.eps_new, 0.0)
        if self.Delta == 0.0 and eps <= PERFECT_RECOVERY_EPS:
            return float("inf")  # noiseless perfect recovery: ln(1/ε) diverges, reported as non-finite
        out = -0.5 * np.log(2 * np.pi * np.e * (self.Delta + eps))
        return float(out + self.alpha_free_entropy_rest(st) / alpha)

    # ---- noiseless perfect recovery --------------------------------------------------------
    def perfect_recovery(self, x: np.ndarray, alpha: float) -> bool:
        """Noiseless perfect recovery to the solver's resolution: Δ = 0 and ε ≤ PERFECT_RECOVERY_EPS, Q free.

        It is the edge of the domain for the engine: Q̂ = O(1/ε) diverges there, and along a branch that runs into
        perfect recovery α is within O(ε) of its limit, which the residual's absolute tolerance no longer
        resolves (a curve traced there wanders in α by round-off, each wiggle a spurious fold). The stable
        state itself is represented at the clip Q_MAX (ε ≈ g'(1)·1e-13).
        """
        return self.Delta == 0.0 and self.n_q > 0 and self.state(x, alpha).eps_new <= PERFECT_RECOVERY_EPS

    @property
    def perfect_recovery_threshold(self) -> float | None:
        """α_PR = γ, where noiseless perfect recovery becomes stable, when it is known in closed form.

        At Δ = 0 with Gaussian weights and no quadratic channel (μ2 = 0, g ≢ 0), near Q ≡ 1 the map gives
        1 − Q(v) = 1/Q̂(v) = γ(Δ + ε)/(α v² g'(1)) and ε = g'(1) E_v[v²(1 − Q(v))], so one iteration multiplies ε
        by γ/α (E v² = 1, every atom v ≠ 0): Q ≡ 1, ε = 0 attracts for α > γ and repels for α < γ, and the
        specialised branch that joins it there has α → γ as Q → 1 (n = αd² samples against kd = γd² weights).
        None otherwise (noisy data, binary weights, a quadratic channel, pinned Q).
        """
        if self.Delta != 0.0 or self.pinned or self.channel.prior != "gaussian" or self.act.mu2 != 0.0:
            return None
        if not self.act.has_higher_orders or np.any(self.readout.v2 == 0.0):
            return None
        return float(self.gamma)

    def mutual_information(self, x: np.ndarray, alpha: float) -> float:
        """MI/(kd) = (1/γ)[(α/2) ln(1 + ε/Δ) − rest]; infinite for noiseless data (Δ = 0, ε > 0)."""
        st = self.state(x, alpha)
        eps = max(st.eps_new, 0.0)
        if self.Delta == 0.0:
            return float("inf") if (alpha > 0 and eps > 0) else float("nan")
        return float((0.5 * alpha * np.log1p(eps / self.Delta) - self.alpha_free_entropy_rest(st)) / self.gamma)

    # ---- the free entropy as a function of independent order parameters (stationarity checks)
    def free_entropy_full(self, Q: np.ndarray, Q_hat: np.ndarray, R2: float, R2_hat: float, alpha: float) -> float:
        """f_RS(Q, Q̂, R_2, R̂_2) with τ(Q) by moment matching; its stationary points are the fixed points."""
        a, ro, den = self.act, self.readout, self.denoiser
        Q = np.asarray(Q, dtype=float)
        Q_hat = np.asarray(Q_hat, dtype=float)
        K_star = a.mu1**2 + a.mu2**2 * R2 / 2.0 + ro.expect(ro.v2 * a.g(Q))
        out = -0.5 * np.log(2 * np.pi * np.e * (self.Delta + self.K_d - K_star))
        out += (self.R_d - R2) * R2_hat / (4 * alpha)
        out += (self.gamma / alpha) * ro.expect(self.channel.psi(Q_hat) - 0.5 * Q * Q_hat)
        if a.mu2 != 0.0:
            tau = den.inverse(float(np.dot(ro.p, ro.v2 * Q**2)))
            out += float(den.iota(tau) - den.iota(tau + R2_hat)) / alpha
        return float(out)

    # ---- reduced-map stability -------------------------------------------------------------
    def stability(self, jacobian: np.ndarray) -> float:
        """1 − max Re λ of the Jacobian of the map on Q alone (ε and τ eliminated: inner equations solved).

        A real eigenvalue above 1 means the branch repels damped iteration for every mixing (the
        middle branch between two folds); complex or negative eigenvalues of modulus > 1 are cured by
        damping and do not make a solution unstable. At a fold the margin crosses 0.
        """
        n = self.n_q
        if n == 0:
            return float(1.0 - jacobian[0, 0])
        A = jacobian[:n, :n]
        B = jacobian[:n, n:]
        C = jacobian[n:, :n]
        inner = np.eye(jacobian.shape[0] - n) - jacobian[n:, n:]
        try:
            red = A + B @ np.linalg.solve(inner, C)
        except np.linalg.LinAlgError:
            red = A
        return float(1.0 - np.max(np.linalg.eigvals(red).real))

    # ---- exhaustive search for a single readout atom ---------------------------------------
    def scan(self, alpha: float, grid: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """The universal solution and approximate roots Q > 0 of the one-atom reduced equation.

        ``grid`` must start at Q = 0 (the universal root, returned first). With one atom (ones /
        rademacher readouts) the map reduces to one equation in Q once ε and τ are eliminated: τ by
        inverting m_S, ε by bisection (ε_new is increasing in ε and maps [c, c + μ2²/2] into itself, so
        the bracket always holds a root). Sign changes of q(Q̂(Q)) − Q locate every branch the grid
        resolves; Newton then polishes them.
        """
        if self.readout.size != 1 or self.pinned:
            raise ValueError("scan needs a single readout atom and an unpinned Q")
        a, den = self.act, self.denoiser
        v2 = float(self.readout.v2[0])
        mu2sq = a.mu2**2
        Q = np.asarray(grid, dtype=float)
        T = v2 * Q**2
        base = a.g1 - v2 * a.g(Q)
        tau = np.zeros_like(Q)
        if mu2sq == 0.0 or alpha == 0.0:
            eps = base + (0.5 * mu2sq * (1.0 - T) if mu2sq else 0.0)
            D = self.Delta + eps
            hcz = np.zeros_like(Q)
            if mu2sq:
                tau = np.asarray(den.table.inverse_overlap(T), dtype=float)
        else:
            tau = np.asarray(den.table.inverse_overlap(T), dtype=float)
            lo, hi = base.copy(), base + 0.5 * mu2sq
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                r = alpha * mu2sq / np.maximum(self.Delta + mid, 1e-300)
                f = mid - (0.5 * mu2sq * den.mmse(tau + r) + base)
                lo = np.where(f < 0, mid, lo)
                hi = np.where(f < 0, hi, mid)
            eps = 0.5 * (lo + hi)
            D = self.Delta + eps
            r = alpha * mu2sq / np.maximum(D, 1e-300)
            hcz = (den.mmse(tau) - den.mmse(tau + r)) / np.maximum(den.dm(tau), 1e-300)
        spec = (alpha / self.gamma) * v2 * a.dg(Q) / np.maximum(D, 1e-300)
        R = self.channel.overlap((v2 * Q / self.gamma) * hcz + spec) - Q
        t = np.log1p(tau)
        out = []
        R[0] = 0.0  # exact root; sign changes are looked for on Q > 0 only
        for i in 1 + np.nonzero(np.sign(R[1:-1]) * np.sign(R[2:]) < 0)[0]:
            w = R[i] / (R[i] - R[i + 1])
            q = Q[i] + w * (Q[i + 1] - Q[i])
            e = float(eps[i] + w * (eps[i + 1] - eps[i]))
            tt = float(t[i] + w * (t[i + 1] - t[i]))
            out.append(self.join(self.channel.log_snr_of_overlap(np.array([q])), e, tt))
        return self.join(np.zeros(1), float(eps[0]), 0.0), out
