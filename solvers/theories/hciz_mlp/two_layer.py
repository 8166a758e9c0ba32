"""Two hidden layers with a linear component (μ1 ≠ 0): replica-symmetric saddle point of Barbier et al. (deep paper).

Network y = vᵀσ₂(W₂ σ₁(W₁x/√d)/√k₁)/√k₂ + √Δ z, k_l = γ_l d, n = αd², under assumption H2: μ₀ = μ₂ = 0 in both
layers and E σ₁² = 1 (so the pre-activations of layer 2 have unit variance). μ₁ (layer 1) and ν₁ (layer 2) are
the linear Hermite coefficients, g⁽¹⁾, g⁽²⁾ the l ≥ 3 parts of the covariances.

Order parameters, on the atoms of the readout law P_v (in v²) and of the effective readout of a layer-1
neuron, v₂ = (W₂ᵀv)_j/√k₂ ~ N(0, 1) (folded Gauss–Hermite atoms):

    Q₁(v₂)     overlap of the first-layer rows with effective readout v₂,
    Q₂(v, v₂)  overlap of the second-layer entries, resolved by their row's readout v and column's v₂,
    Q₂:₁(v)    overlap of the rows of the product W^(2:1) = W₂W₁/√k₁ with readout v,

and conjugates Q̂₁, Q̂₂, Q̂₂:₁, tilts τ_v. With inner_v = μ₁²Q₂:₁(v) + E_{v₂}[Q₂(v, v₂) g⁽¹⁾(Q₁(v₂))]
(the teacher–student correlation of the layer-2 pre-activation of a neuron with readout v) [derived by
expanding the output covariance in Hermite components; the linear part of the whole network, μ₁ν₁ vᵀW^(2:1)x,
is learned exactly since n ≫ d]:

    K*  = μ₁²ν₁² + ν₁² E_{v₂}[v₂² g⁽¹⁾(Q₁)] + E_v[v² g⁽²⁾(inner_v)],   K_d = ν₁² + g⁽²⁾(1),   D = Δ + K_d − K*
    f⁽²⁾ = −½ ln(2πe D) + (γ₁/α) E_{v₂}[ψ(Q̂₁) − Q₁Q̂₁/2] + (γ₁γ₂/α) E_{v,v₂}[ψ(Q̂₂) − Q₂Q̂₂/2]
           + (γ₂/α) E_v[Q̂₂:₁(1 − Q₂:₁)/2 − ι_v(τ_v + Q̂₂:₁) + ι_v(τ_v)]

(the paper's f^(2)_RS as given in the theory notes). ι_v is the rectangular channel of the rows of W^(2:1)
with readout class v, aspect ratios γ₁ (inner) and η_v = γ₂P(v²) (rows per d; 0 for continuous laws, where
it is the iid Gaussian channel), 2ι_v' = mmse_v; τ_v by moment matching mmse_v(τ_v) = 1 − T_v,
T_v = E_{v₂}[Q₂(v, v₂)Q₁(v₂)]. Setting the derivatives of f⁽²⁾ to zero (τ_v depends on Q₁, Q₂ through T_v,
dτ_v/dT_v = −1/mmse_v'(τ_v)) gives, with R_v = (Q₂:₁ − T_v)/(−mmse_v'(τ_v)),

    Q̂₂:₁(v)   = (α/γ₂) c₂:₁ v² g⁽²⁾'(inner_v)/D,                    Q₂:₁(v) = 1 − mmse_v(τ_v + Q̂₂:₁(v))
    Q̂₁(v₂)    = (α/γ₁) ν₁² v₂² g⁽¹⁾'(Q₁)/D + (α/c_B) g⁽¹⁾'(Q₁) E_v[v² g⁽²⁾'(inner_v) Q₂]/D + (γ₂/γ₁) E_v[R_v Q₂]
    Q̂₂(v, v₂) = (α/(γ₁γ₂)) v² g⁽²⁾'(inner_v) g⁽¹⁾(Q₁)/D + (1/γ₁) R_v Q₁,        Q_l = q_{P_W}(Q̂_l)

with c₂:₁ = μ₁², c_B = γ₁ [derived]. ``prefactors`` selects the variants of the authors' notebooks:
``ones_notebook`` has c₂:₁ = ν₁², ``gauss_notebook`` has c_B = γ₂. They are not stationary points of f⁽²⁾
(the tests show it); f⁽²⁾ evaluated at their fixed points still ranks their branches.

``quench`` pins Q₁ ≡ 1 (the first layer given: the student knows the teacher's W₁); the free entropy then
omits the first layer's entropic term.

Unknowns x = [y₁(v₂) | y₂(v, v₂) | t(v)]: log-SNRs y = ln(1 + Q̂) of the scalar channels (Q = q(e^y − 1)) and
t = ln(1 + s) with s_v the data's SNR on the product channel, so that Q₂:₁ = 1 − mmse_v(τ_v(T_v) + s_v) ≥ T_v and
R_v ≥ 0 for every iterate, not only at the fixed point (a total SNR as unknown would let an iterate sit below
the tilt, with R_v < 0). The map is x ↦ [ln(1 + Q̂₁), ln(1 + Q̂₂), ln(1 + Q̂₂:₁)]; its Jacobian is analytic
(mmse_v'' by a central difference of the table's mmse_v'). Without product channel (c₂:₁ = 0) Q̂₂:₁ = 0,
Q₂:₁ = T_v and t drops out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from solvers.theories.hciz_mlp.activations import Activation
from solvers.theories.hciz_mlp.memo import StateMemo
from solvers.theories.hciz_mlp.priors import ScalarChannel
from solvers.theories.hciz_mlp.product_channel import TAU_MAX, ProductChannel
from solvers.theories.hciz_mlp.readouts import ReadoutAtoms

PREFACTORS = ("derived", "ones_notebook", "gauss_notebook")
Q_MAX = 1.0 - 1e-13
T_MAX = float(np.log1p(TAU_MAX))


@dataclass
class TwoLayerState:
    """One evaluation of the saddle-point map (arrays: Q1 (S,), Q2 (V, S), per-v quantities (V,))."""

    Q1: np.ndarray
    Q2: np.ndarray
    Q21: np.ndarray
    T: np.ndarray
    tau: np.ndarray
    inner: np.ndarray
    eps: float
    K_star: float
    Q_hat1: np.ndarray
    Q_hat2: np.ndarray
    Q_hat21: np.ndarray
    R: np.ndarray
    x_new: np.ndarray
    work: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TwoLayerModel:
    """One spec of the two-hidden-layer theory with α free."""

    act1: Activation
    act2: Activation
    channel: ScalarChannel
    readout: ReadoutAtoms  # P_v, atoms in v²
    hidden: ReadoutAtoms  # P_{v2} = N(0, 1), atoms in v2²
    gamma1: float
    gamma2: float
    Delta: float
    products: tuple[ProductChannel, ...]  # one per readout atom
    prefactors: str = "derived"
    quench: bool = False
    memo: StateMemo = field(default_factory=StateMemo, compare=False, repr=False)
    core_memo: StateMemo = field(default_factory=StateMemo, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.prefactors not in PREFACTORS:
            raise ValueError(f"prefactors must be one of {PREFACTORS}")
        if len(self.products) != self.readout.size:
            raise ValueError("one product channel per readout atom")

    # ---- coefficients and layout -------------------------------------------------------------------
    @property
    def mu1sq(self) -> float:
        return float(self.act1.mu1**2)

    @property
    def nu1sq(self) -> float:
        return float(self.act2.mu1**2)

    @property
    def c21(self) -> float:
        """Weight of the product overlap in Q̂₂:₁: μ₁² (derived), ν₁² in the ONES notebook."""
        return self.nu1sq if self.prefactors == "ones_notebook" else self.mu1sq

    @property
    def cB(self) -> float:
        """Denominator of the second output-channel term of Q̂₁: γ₁ (derived), γ₂ in the GAUSS notebook."""
        return self.gamma2 if self.prefactors == "gauss_notebook" else self.gamma1

    @property
    def has_product(self) -> bool:
        return self.c21 != 0.0

    @property
    def S(self) -> int:
        return self.hidden.size

    @property
    def V(self) -> int:
        return self.readout.size

    @property
    def n1(self) -> int:
        return 0 if self.quench else self.S

    @property
    def n21(self) -> int:
        return self.V if self.has_product else 0

    @property
    def dim(self) -> int:
        return self.n1 + self.V * self.S + self.n21

    @cached_property
    def g1_one(self) -> float:
        return float(self.act1.g1)

    @cached_property
    def g2_one(self) -> float:
        """g⁽²⁾ at the Nishimori correlation μ₁² + g⁽¹⁾(1) = E σ₁² = 1."""
        return float(self.act2.g(min(1.0, self.mu1sq + self.g1_one)))

    @property
    def K_d(self) -> float:
        return self.mu1sq * self.nu1sq + self.nu1sq * self.g1_one + self.g2_one

    def split(self, x: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
        x = np.asarray(x, dtype=float)
        n1, VS = self.n1, self.V * self.S
        y1 = None if self.quench else x[:n1]
        y2 = x[n1 : n1 + VS].reshape(self.V, self.S)
        t = x[n1 + VS :] if self.has_product else None
        return y1, y2, t

    def join(self, y1: np.ndarray | None, y2: np.ndarray, t: np.ndarray | None) -> np.ndarray:
        parts = [] if self.quench else [np.asarray(y1, dtype=float).ravel()]
        parts.append(np.asarray(y2, dtype=float).ravel())
        if self.has_product:
            parts.append(np.asarray(t, dtype=float).ravel())
        return np.concatenate(parts)

    def overlaps(self, x: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Q₁, Q₂, Q₂:₁) of a solution vector (they do not depend on α; passing the control value reuses the
        evaluation the solver has just made)."""
        st = self.state(x, alpha)
        return st.Q1, st.Q2, st.Q21

    # ---- the map --------------------------------------------------------------------------------------
    def state(self, x: np.ndarray, alpha: float) -> TwoLayerState:
        return self.memo.get(x, alpha, self._state)

    def _core(self, x: np.ndarray, _alpha: float) -> dict:
        """Everything of a state that does not depend on α: the overlaps, the tilts, ε and the covariances."""
        y1, y2, t = self.split(np.array(x, dtype=float))  # a copy: the memo outlives the caller's array
        ch = self.channel
        ps, s2 = self.hidden.p, self.hidden.v2
        pv, v2 = self.readout.p, self.readout.v2
        if self.quench:
            Q1, c1, dQ1 = np.ones(self.S), np.zeros(self.S), np.zeros(self.S)
        else:
            Q1, c1, dQ1 = ch.overlap_complement_slope_from_log(y1)
            dQ1 = dQ1 * (Q1 < Q_MAX)
            Q1, c1 = np.minimum(Q1, Q_MAX), np.maximum(c1, 1.0 - Q_MAX)
        Q2, c2, dQ2 = ch.overlap_complement_slope_from_log(y2)
        dQ2 = dQ2 * (Q2 < Q_MAX)
        Q2, c2 = np.minimum(Q2, Q_MAX), np.maximum(c2, 1.0 - Q_MAX)
        T = Q2 @ (ps * Q1)
        one_minus_T = (c2 + Q2 * c1) @ ps  # 1 − Q₁Q₂ without cancellation
        V = self.V
        if self.has_product:
            tau = np.array([self.products[v].tilt(one_minus_T[v]) for v in range(V)])
            omega = tau + np.expm1(np.minimum(t, T_MAX))
            comp21 = np.array([self.products[v].mmse(omega[v]) for v in range(V)])
            Q21 = 1.0 - comp21
            dmm_tau = np.array([self.products[v].dmmse(tau[v]) for v in range(V)])
            R = (one_minus_T - comp21) / np.maximum(-dmm_tau, 1e-300)
        else:
            omega = np.zeros(V)
            comp21 = one_minus_T
            Q21 = T
            tau = np.zeros(V)
            dmm_tau = -np.ones(V)
            R = np.zeros(V)
        a1, a2 = self.act1, self.act2
        g1s, dg1s, d2g1s = a1.g_and_derivatives(Q1)
        inner = self.mu1sq * Q21 + Q2 @ (ps * g1s)
        g2v, dg2v, d2g2v = a2.g_and_derivatives(inner)
        eps = float(self.nu1sq * np.dot(ps * s2, self.g1_one - g1s) + np.dot(pv * v2, self.g2_one - g2v))
        K_star = self.K_d - eps
        D = max(self.Delta + eps, 1e-300)
        return {"Q1": Q1, "Q2": Q2, "Q21": Q21, "T": T, "tau": tau, "inner": inner, "eps": eps,
                "K_star": K_star, "R": R, "c1": c1, "c2": c2, "dQ1": dQ1, "dQ2": dQ2, "omega": omega,
                "comp21": comp21, "one_minus_T": one_minus_T, "dmm_tau": dmm_tau, "g1s": g1s, "dg1s": dg1s,
                "d2g1s": d2g1s, "g2v": g2v, "dg2v": dg2v, "d2g2v": d2g2v, "D": D, "y1": y1, "y2": y2, "t": t}

    def _state(self, x: np.ndarray, alpha: float) -> TwoLayerState:
        # The conjugates are affine in α at fixed x (Q̂ = αA(x) + B(x)): the α-free core is memoised on x alone,
        # so the residual at α ± h (the continuation's parameter derivative) costs only this tail.
        c = self.core_memo.get(x, 0.0, self._core)
        ch = self.channel
        s2 = self.hidden.v2
        pv, v2 = self.readout.p, self.readout.v2
        Q1, Q2, R, D = c["Q1"], c["Q2"], c["R"], c["D"]
        g1s, dg1s, dg2v = c["g1s"], c["dg1s"], c["dg2v"]
        Qh21 = (alpha / self.gamma2) * self.c21 * v2 * dg2v / D
        H = (pv * v2 * dg2v) @ Q2
        Qh1 = ((alpha / self.gamma1) * self.nu1sq * s2 * dg1s + (alpha / self.cB) * dg1s * H) / D \
            + (self.gamma2 / self.gamma1) * ((pv * R) @ Q2)
        Qh2 = (alpha / (self.gamma1 * self.gamma2)) * np.outer(v2 * dg2v, g1s) / D + np.outer(R, Q1) / self.gamma1
        t_new = np.minimum(np.log1p(Qh21), T_MAX) if self.has_product else None
        x_new = self.join(None if self.quench else ch.log_snr(Qh1), ch.log_snr(Qh2), t_new)
        work = {**c, "H": H}
        return TwoLayerState(Q1, Q2, c["Q21"], c["T"], c["tau"], c["inner"], c["eps"], c["K_star"], Qh1, Qh2, Qh21,
                             R, x_new, work)

    def fixed_point(self, x: np.ndarray, alpha: float) -> np.ndarray:
        return self.state(x, alpha).x_new

    def residual(self, x: np.ndarray, alpha: float) -> np.ndarray:
        return self.fixed_point(x, alpha) - np.asarray(x, dtype=float)

    def jacobian(self, x: np.ndarray, alpha: float) -> np.ndarray:
        """dG/dx of the fixed-point map by the chain rule (kept with the memoised state: Newton, the stability
        margin and the continuation's tangent ask for it at the same point)."""
        st = self.state(x, alpha)
        known = st.work.get("jacobian")
        if known is None:
            known = st.work["jacobian"] = self._jacobian(st, alpha)
        return known.copy()

    def _jacobian(self, st: TwoLayerState, alpha: float) -> np.ndarray:
        """Gradients are dense (rows: the intermediate, columns: x) except that of Q₂, which is diagonal: a sum
        Σ_s a[v, s] ∂Q₂[v, s]/∂x is written straight into the columns of y₂ (``_on_y2``)."""
        w = st.work
        ch = self.channel
        S, V, n = self.S, self.V, self.dim
        n1, VS = self.n1, V * S
        ps, s2 = self.hidden.p, self.hidden.v2
        pv, v2 = self.readout.p, self.readout.v2
        D = w["D"]
        q1d, q2d = w["dQ1"], w["dQ2"]  # dQ₁/dy₁ (S,), dQ₂/dy₂ (V, S)
        cols2 = n1 + np.arange(VS).reshape(V, S)

        def on_y2(values: np.ndarray) -> np.ndarray:
            """(V, n) with values[v, s]·dQ₂[v, s]/dy₂[v, s] in the column of y₂[v, s]."""
            out = np.zeros((V, n))
            out[np.arange(V)[:, None], cols2] = values * q2d
            return out

        def on_y1(rows: np.ndarray) -> np.ndarray:
            """(m, n) with rows[:, s]·dQ₁/dy₁[s] in the columns of y₁ (a matrix times dQ₁)."""
            out = np.zeros((rows.shape[0], n))
            if not self.quench:
                out[:, :n1] = rows * q1d
            return out

        dT = on_y2(ps * st.Q1) + on_y1(st.Q2 * ps)
        if self.has_product:
            e_t = np.exp(np.minimum(w["t"], T_MAX)) * (w["t"] < T_MAX)
            dtau = dT / (-w["dmm_tau"])[:, None] * (st.tau < TAU_MAX)[:, None]
            domega = dtau.copy()
            domega[np.arange(V), n1 + VS + np.arange(V)] += e_t
            dmm_omega = np.array([self.products[v].dmmse(w["omega"][v]) for v in range(V)])
            dQ21 = -dmm_omega[:, None] * domega
        else:
            dQ21 = dT
            dtau = np.zeros((V, n))
        g1s, dg1s, d2g1s = w["g1s"], w["dg1s"], w["d2g1s"]
        dg2v, d2g2v = w["dg2v"], w["d2g2v"]
        dinner = self.mu1sq * dQ21 + on_y2(ps * g1s) + on_y1(st.Q2 * (ps * dg1s))
        dK = self.nu1sq * on_y1((ps * s2 * dg1s)[None, :])[0] + (pv * v2 * dg2v) @ dinner  # dK*/dx = −dD/dx
        # Q̂₂:₁
        a21 = alpha * self.c21 / self.gamma2
        dQh21 = (a21 * v2 * d2g2v / D)[:, None] * dinner + (a21 * v2 * dg2v / D**2)[:, None] * dK[None, :]
        # R = (Q₂:₁ − T)/(−mmse'(τ))
        if self.has_product:
            d2mm = np.array([self.products[v].d2mmse(st.tau[v]) for v in range(V)])
            dR = (dQ21 - dT + (st.R * d2mm)[:, None] * dtau) / (-w["dmm_tau"])[:, None]
        else:
            dR = np.zeros((V, n))
        # Q̂₁: H_s = Σ_v p_v v² g⁽²⁾'(inner_v) Q₂[v, s]
        H = w["H"]
        dH = (st.Q2 * (pv * v2 * d2g2v)[:, None]).T @ dinner
        dH[np.arange(S)[None, :], cols2] += (pv * v2 * dg2v)[:, None] * q2d
        A1, B1, C1 = alpha * self.nu1sq / self.gamma1, alpha / self.cB, self.gamma2 / self.gamma1
        dQh1 = (B1 * dg1s / D)[:, None] * dH + ((A1 * s2 * dg1s + B1 * dg1s * H) / D**2)[:, None] * dK[None, :]
        if not self.quench:
            dQh1[np.arange(S), np.arange(S)] += (A1 * s2 + B1 * H) * d2g1s / D * q1d
        dQh1 += C1 * ((st.Q2 * pv[:, None]).T @ dR)
        dQh1[np.arange(S)[None, :], cols2] += C1 * (pv * st.R)[:, None] * q2d
        # Q̂₂[v, s]
        E, F = alpha / (self.gamma1 * self.gamma2), 1.0 / self.gamma1
        dQh2 = (E * v2 * d2g2v / D)[:, None, None] * dinner[:, None, :] * g1s[None, :, None]
        dQh2 += (E * v2 * dg2v / D**2)[:, None, None] * g1s[None, :, None] * dK[None, None, :]
        dQh2 += F * dR[:, None, :] * st.Q1[None, :, None]
        if not self.quench:
            diag = (E * v2 * dg2v / D)[:, None] * dg1s[None, :] + F * st.R[:, None]  # coefficient of dQ₁[s]
            dQh2[:, np.arange(S), np.arange(S)] += diag * q1d[None, :]
        rows = []
        if not self.quench:
            rows.append(ch.d_log_snr(st.Q_hat1)[:, None] * dQh1)
        rows.append((ch.d_log_snr(st.Q_hat2)[:, :, None] * dQh2).reshape(VS, n))
        if self.has_product:
            live = (np.log1p(st.Q_hat21) < T_MAX)[:, None]
            rows.append(live * dQh21 / (1.0 + st.Q_hat21)[:, None])
        return np.vstack(rows)

    def stability(self, jacobian: np.ndarray) -> float:
        """1 − max Re λ(J) of the fixed-point map (a real eigenvalue above 1 repels damped iteration)."""
        return float(1.0 - np.max(np.linalg.eigvals(jacobian).real))

    def margin(self, x: np.ndarray, alpha: float) -> float:
        """The stability margin at (x, α), kept with the memoised state (the continuation, the branch label and
        the catalogue each ask for it)."""
        st = self.state(x, alpha)
        known = st.work.get("margin")
        if known is None:
            known = st.work["margin"] = self.stability(self.jacobian(x, alpha))
        return known

    # ---- free entropy -----------------------------------------------------------------------------------
    def alpha_free_entropy_rest(self, st: TwoLayerState) -> float:
        """α·f⁽²⁾ + (α/2) ln(2πe D): the entropic and matrix terms (once per memoised state)."""
        known = st.work.get("free_entropy_rest")
        if known is None:
            known = st.work["free_entropy_rest"] = self._alpha_free_entropy_rest(st)
        return known

    def _alpha_free_entropy_rest(self, st: TwoLayerState) -> float:
        ch = self.channel
        ps, pv = self.hidden.p, self.readout.p
        out = 0.0
        if not self.quench:
            out += self.gamma1 * float(np.dot(ps, ch.psi(st.Q_hat1) - 0.5 * st.Q1 * st.Q_hat1))
        out += self.gamma1 * self.gamma2 * float(pv @ (ch.psi(st.Q_hat2) - 0.5 * st.Q2 * st.Q_hat2) @ ps)
        if self.has_product:
            rect = [0.5 * st.Q_hat21[v] * st.work["comp21"][v] - self.products[v].iota(st.tau[v] + st.Q_hat21[v])
                    + self.products[v].iota(st.tau[v]) for v in range(self.V)]
            out += self.gamma2 * float(np.dot(pv, rect))
        return out

    def free_entropy(self, x: np.ndarray, alpha: float) -> float:
        if alpha <= 0.0:
            return float("nan")
        st = self.state(x, alpha)
        return float(-0.5 * np.log(2 * np.pi * np.e * (self.Delta + st.eps)) + self.alpha_free_entropy_rest(st) / alpha)

    def mutual_information(self, x: np.ndarray, alpha: float) -> float:
        """MI per first-layer weight, (1/γ₁)[(α/2) ln(1 + ε/Δ) − rest] (infinite for noiseless data)."""
        st = self.state(x, alpha)
        if self.Delta == 0.0:
            return float("inf") if (alpha > 0 and st.eps > 0) else float("nan")
        return float((0.5 * alpha * np.log1p(st.eps / self.Delta) - self.alpha_free_entropy_rest(st)) / self.gamma1)

    def free_entropy_full(self, Q1: np.ndarray, Q_hat1: np.ndarray, Q2: np.ndarray, Q_hat2: np.ndarray,
                          Q21: np.ndarray, Q_hat21: np.ndarray, alpha: float) -> float:
        """f⁽²⁾ with every order parameter and conjugate independent, τ_v by moment matching from Q₁, Q₂:
        its stationary points are the saddle points (the derived equations)."""
        ch = self.channel
        ps, s2 = self.hidden.p, self.hidden.v2
        pv, v2 = self.readout.p, self.readout.v2
        Q1 = np.ones(self.S) if self.quench else np.asarray(Q1, dtype=float)
        Q2 = np.asarray(Q2, dtype=float).reshape(self.V, self.S)
        Q21 = np.asarray(Q21, dtype=float)
        inner = self.mu1sq * Q21 + Q2 @ (ps * self.act1.g(Q1))
        K_star = (self.mu1sq * self.nu1sq + self.nu1sq * np.dot(ps * s2, self.act1.g(Q1))
                  + np.dot(pv * v2, self.act2.g(inner)))
        out = -0.5 * np.log(2 * np.pi * np.e * (self.Delta + self.K_d - K_star))
        rest = 0.0
        if not self.quench:
            Q_hat1 = np.asarray(Q_hat1, dtype=float)
            rest += self.gamma1 * float(np.dot(ps, ch.psi(Q_hat1) - 0.5 * Q1 * Q_hat1))
        Q_hat2 = np.asarray(Q_hat2, dtype=float).reshape(self.V, self.S)
        rest += self.gamma1 * self.gamma2 * float(pv @ (ch.psi(Q_hat2) - 0.5 * Q2 * Q_hat2) @ ps)
        T = Q2 @ (ps * Q1)
        for v in range(self.V):
            prod = self.products[v]
            tau = prod.tilt(1.0 - T[v])
            rest += self.gamma2 * pv[v] * (0.5 * Q_hat21[v] * (1.0 - Q21[v]) - prod.iota(tau + Q_hat21[v])
                                           + prod.iota(tau))
        return float(out + rest / alpha)
