"""Reduced L-layer model: μ0 = μ1 = μ2 = 0 and E σ² = 1, so every matrix (HCIZ) channel drops out.

With no linear or quadratic Hermite component the only learnable structure is the overlap of each
layer with its teacher. Homogeneous overlaps Q_1 … Q_{L−1} for the inner layers and a readout-resolved
Q_L(v) for the last one. Pre-activation overlaps propagate as

    a_1 = Q_1,  b_l = g(a_l),  a_l = Q_l b_{l−1} (1 < l < L),  a_L(v) = Q_L(v) b_{L−1},
    K* = E_v[v² g(a_L(v))],   K_d = g(1) = 1,   ε* = 1 − K*,

(K* = g(Q_L g(Q_{L−1} … g(Q_1))) for v = 1, the form of the deep tanh model of Barbier et al.). Layer l
has γ_l γ_{l−1} d² weights (γ_0 = 1), which sets the entropic weight of its scalar channel:

    f = −½ ln(2πe(Δ + ε*)) + Σ_l (γ_l γ_{l−1}/α) E[ψ(Q̂_l) − Q_l Q̂_l/2],
    Q̂_l = α/(γ_l γ_{l−1}) · ∂K*/∂Q_l / (Δ + ε*),     Q_l = q_{P_W}(Q̂_l)

(∂K*/∂Q_L(v) per unit probability of the atom). For L = 1 this is the shallow theory with μ2 = 0, and
for L = 2 it is the two-hidden-layer equations of the deep paper with μ1 = 0 (the rectangular channel
term vanishes with μ1, the layer-1 readout dependence with ν1 = μ1 of layer 2).
Since ∂K*/∂Q_l ∝ b_{l−1}, which vanishes until all layers below have specialised, the fixed points are
either universal (all Q = 0, ε* = 1) or specialised in every layer; the specialisation propagates from the
input layer outwards along a branch.

Unknowns: the log-SNRs y = ln(1 + Q̂) of every layer (and atom of the last layer), Q = q_{P_W}(e^y − 1);
the map is y ↦ ln(1 + Q̂(Q(y))). Near α_e the deep specialised branch has 1 − Q ~ 1e-6, where Q itself
is too compressed for continuation to resolve the fold, while y is well scaled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from solvers.theories.hciz_mlp.activations import Activation
from solvers.theories.hciz_mlp.memo import StateMemo
from solvers.theories.hciz_mlp.priors import ScalarChannel
from solvers.theories.hciz_mlp.readouts import ReadoutAtoms

Q_MAX = 1.0 - 1e-13
#: Evaluations remembered per model.


@dataclass(frozen=True)
class DeepState:
    Q_inner: np.ndarray  # Q_1 … Q_{L−1}
    Q_last: np.ndarray  # Q_L(v)
    eps: float
    K_star: float
    Q_hat_inner: np.ndarray
    Q_hat_last: np.ndarray
    b: np.ndarray  # post-activation overlaps b_1 … b_{L−1}


@dataclass(frozen=True)
class DeepModel:
    act: Activation
    channel: ScalarChannel
    readout: ReadoutAtoms
    gammas: tuple[float, ...]
    Delta: float
    memo: StateMemo = field(default_factory=StateMemo, compare=False, repr=False)

    @cached_property
    def _weights(self) -> np.ndarray:
        return self.weights()

    @property
    def depth(self) -> int:
        return len(self.gammas)

    @property
    def dim(self) -> int:
        return self.depth - 1 + self.readout.size

    @property
    def K_d(self) -> float:
        return float(self.act.g1)

    def weights(self) -> np.ndarray:
        """γ_l γ_{l−1} (γ_0 = 1): weights per d² of layer l."""
        g = np.asarray(self.gammas)
        return g * np.concatenate([[1.0], g[:-1]])

    def overlaps(self, x: np.ndarray) -> np.ndarray:
        """Q of every component of the solution vector."""
        return np.minimum(self.channel.overlap_from_log(np.asarray(x, dtype=float)), Q_MAX)

    def state(self, x: np.ndarray, alpha: float) -> DeepState:
        return self.memo.get(x, alpha, self._state)

    def _state(self, x: np.ndarray, alpha: float) -> DeepState:
        Q = self.overlaps(x)
        Q_in, Q_last = Q[: self.depth - 1], Q[self.depth - 1 :]
        act = self.act
        v2, p = self.readout.v2, self.readout.p
        L = self.depth
        # forward: a_l, b_l = g(a_l) and g'(a_l) for the inner layers
        a = np.empty(L - 1)
        b = np.empty(L - 1)
        db = np.empty(L - 1)
        prev = 1.0
        for l in range(L - 1):
            a[l] = Q_in[l] * prev
            b[l], db[l] = act.g_and_dg(a[l])
            prev = b[l]
        a_last = Q_last * prev
        g_last, dg_last = act.g(a_last), act.dg(a_last)
        K_star = float(np.dot(p, v2 * g_last))
        eps = self.K_d - K_star
        D = self.Delta + eps
        w = self._weights
        # backward: dK*/db_{L−1}, then down the chain
        dK_dQlast = v2 * dg_last * prev  # per unit probability of each atom
        dK_db = float(np.dot(p, v2 * dg_last * Q_last))
        dK_dQin = np.empty(L - 1)
        for l in range(L - 2, -1, -1):
            below = b[l - 1] if l > 0 else 1.0
            dK_dQin[l] = dK_db * db[l] * below
            dK_db = dK_db * db[l] * Q_in[l]
        scale = alpha / max(D, 1e-300)
        Q_hat_in = scale * dK_dQin / w[: L - 1]
        Q_hat_last = scale * dK_dQlast / w[L - 1]
        return DeepState(Q_in, Q_last, eps, K_star, Q_hat_in, Q_hat_last, b)

    def fixed_point(self, x: np.ndarray, alpha: float) -> np.ndarray:
        st = self.state(x, alpha)
        return self.channel.log_snr(np.concatenate([st.Q_hat_inner, st.Q_hat_last]))

    def alpha_free_entropy_rest(self, st: DeepState) -> float:
        """α·f + (α/2) ln(2πe(Δ + ε)): the scalar-channel terms."""
        w = self._weights
        ch = self.channel
        inner = float(np.dot(w[:-1], ch.psi(st.Q_hat_inner) - 0.5 * st.Q_inner * st.Q_hat_inner))
        last = w[-1] * self.readout.expect(ch.psi(st.Q_hat_last) - 0.5 * st.Q_last * st.Q_hat_last)
        return inner + float(last)

    def free_entropy(self, x: np.ndarray, alpha: float) -> float:
        if alpha <= 0.0:
            return float("nan")
        st = self.state(x, alpha)
        return float(-0.5 * np.log(2 * np.pi * np.e * (self.Delta + st.eps)) + self.alpha_free_entropy_rest(st) / alpha)

    def mutual_information(self, x: np.ndarray, alpha: float) -> float:
        """MI per first-layer weight, (1/γ_1)[(α/2) ln(1 + ε/Δ) − rest] (per kd as in the shallow case)."""
        st = self.state(x, alpha)
        if self.Delta == 0.0:
            return float("inf") if (alpha > 0 and st.eps > 0) else float("nan")
        return float((0.5 * alpha * np.log1p(st.eps / self.Delta) - self.alpha_free_entropy_rest(st)) / self.gammas[0])

    def free_entropy_full(self, Q: np.ndarray, Q_hat: np.ndarray, alpha: float) -> float:
        """f(Q, Q̂) with independent conjugates (its stationary points are the fixed points)."""
        Q = np.asarray(Q, dtype=float)
        Q_hat = np.asarray(Q_hat, dtype=float)
        st = self.state(self.channel.log_snr_of_overlap(Q), alpha)
        w = self.weights()
        L = self.depth
        ch = self.channel
        inner = float(np.dot(w[: L - 1], ch.psi(Q_hat[: L - 1]) - 0.5 * Q[: L - 1] * Q_hat[: L - 1]))
        last = w[-1] * self.readout.expect(ch.psi(Q_hat[L - 1 :]) - 0.5 * Q[L - 1 :] * Q_hat[L - 1 :])
        return float(-0.5 * np.log(2 * np.pi * np.e * (self.Delta + st.eps)) + (inner + last) / alpha)
