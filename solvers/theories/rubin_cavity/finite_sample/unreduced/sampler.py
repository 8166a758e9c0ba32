"""Particles of the tree-level single-neuron law: stratified in ρ = w·e, sampled by MALA in w⊥.

The law is even in w and, at the feature-learning temperatures, has separate wells in ρ (ρ ≈ 0 and |ρ| ≈ ρ*),
between which no local sampler moves. So ρ is not sampled: it is a quadrature variable. On the nodes
ρ_j = j h (j = 0 … J − 1) the trapezoid rule on the whole line (node 0 once, the others for ±ρ_j) integrates
the smooth, rapidly decaying ρ-marginal to exponential accuracy in 1/h. At each node the conditional law of the
D − 1 perpendicular coordinates, p(w⊥ | ρ_j) ∝ N(w⊥; 0, σ_w²/D) exp E(ρ_j e + w⊥), is sampled by MALA chains
preconditioned by the prior scale, their steps adapted during burn-in (vectorised over all chains of all nodes).
The marginal weight of node j needs Z_j = ∫ N(w⊥) exp E(ρ_j e + w⊥): the ratios Z_{j+1}/Z_j come from the
states of both nodes by Bennett's acceptance ratio (the same w⊥ moved between the two values of ρ), from every
post-burn-in state of the chains; the thinned states are the particles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import erf, expit, logsumexp

from solvers.theories.rubin_cavity.finite_sample.unreduced.law import Couplings


@dataclass(frozen=True)
class SamplerSettings:
    rho_max: float = 2.0
    nodes: int = 21
    chains: int = 8
    burn_in: int = 200
    samples: int = 8
    thin: int = 10
    target_acceptance: float = 0.6
    seed: int = 0


@dataclass(frozen=True)
class Particles:
    """Samples of the law at the pilot couplings: weights, ρ nodes and the pilot's exponent at each sample."""

    W: np.ndarray  # (n, D) weights w = ρ_j e + w⊥
    node: np.ndarray  # (n,) node index j
    chain: np.ndarray  # (n,) chain index within the node
    rho_nodes: np.ndarray  # (J,)
    log_node: np.ndarray  # (J,) log of trapezoid weight × prior of ρ_j × Z_j of the pilot (unnormalised)
    E_pilot: np.ndarray  # (n,) exponent of the pilot law at each sample
    acceptance: np.ndarray  # (J,) MALA acceptance per node
    every: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # every post-burn-in state: W, E, node, chain

    @property
    def log_base(self) -> np.ndarray:
        """log c_i: the law with exponent E has weights ∝ c_i exp(E_i) on the particles."""
        counts = np.bincount(self.node, minlength=len(self.rho_nodes))
        return self.log_node[self.node] - np.log(counts[self.node]) - self.E_pilot


def _bar_log_ratio(forward: np.ndarray, backward: np.ndarray) -> float:
    """log Z1/Z0 by Bennett's acceptance ratio, from Δ = E1 − E0 at samples of law 0 (forward) and of law 1."""
    n0, n1 = len(forward), len(backward)
    log_ratio = math.log(n0 / n1)

    def balance(df: float) -> float:
        return float(np.sum(expit(forward - df - log_ratio)) - np.sum(expit(df + log_ratio - backward)))

    lo = float(min(forward.min(), backward.min())) - 50.0
    hi = float(max(forward.max(), backward.max())) + 50.0
    return brentq(balance, lo, hi, xtol=1e-12)


def sample(couplings: Couplings, X: np.ndarray, sigma_w2: float, settings: SamplerSettings) -> Particles:
    """Particles of the law with these couplings on the inputs X (P × D, teacher direction e = e₁)."""
    D = X.shape[1]
    J, C = settings.nodes, settings.chains
    rng = np.random.default_rng(settings.seed)
    rho_nodes = np.linspace(0.0, settings.rho_max, J)
    h = rho_nodes[1] - rho_nodes[0]
    prior_var = sigma_w2 / D
    rho = np.repeat(rho_nodes, C)
    W = np.zeros((J * C, D))
    W[:, 0] = rho
    W[:, 1:] = math.sqrt(prior_var) * rng.standard_normal((J * C, D - 1))

    def log_target(Wc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        E, grad = couplings.exponent_and_gradient(Wc, X)
        perp = Wc[:, 1:]
        lp = E - 0.5 * np.sum(perp * perp, axis=1) / prior_var
        g = grad[:, 1:] - perp / prior_var
        return lp, g, E

    lp, grad, E = log_target(W)
    log_step = np.full(J, math.log(0.5))  # τ in units of the prior scale, one per node
    accepted = np.zeros(J)
    kept_W, kept_E, all_W, all_E = [], [], [], []
    steps = settings.burn_in + settings.samples * settings.thin
    for step in range(steps):
        tau = np.exp(log_step)[np.repeat(np.arange(J), C)][:, None]
        scale = tau * math.sqrt(prior_var)
        mean_fwd = W[:, 1:] + 0.5 * scale**2 * grad
        prop = W.copy()
        prop[:, 1:] = mean_fwd + scale * rng.standard_normal(mean_fwd.shape)
        lp_new, grad_new, E_new = log_target(prop)
        mean_bwd = prop[:, 1:] + 0.5 * scale**2 * grad_new
        log_q_fwd = -np.sum((prop[:, 1:] - mean_fwd) ** 2, axis=1) / (2 * scale[:, 0] ** 2)
        log_q_bwd = -np.sum((W[:, 1:] - mean_bwd) ** 2, axis=1) / (2 * scale[:, 0] ** 2)
        log_alpha = np.nan_to_num(lp_new - lp + log_q_bwd - log_q_fwd, nan=-np.inf)
        accept = np.log(rng.uniform(size=len(lp))) < log_alpha
        W[accept], lp[accept], grad[accept], E[accept] = prop[accept], lp_new[accept], grad_new[accept], E_new[accept]
        rate = np.minimum(1.0, np.exp(np.minimum(log_alpha, 0.0))).reshape(J, C).mean(axis=1)
        if step < settings.burn_in:  # Robbins–Monro on the log step, towards the target acceptance
            log_step += (rate - settings.target_acceptance) * 2.0 / math.sqrt(step + 1.0)
        else:
            accepted += rate
            all_W.append(W.copy())
            all_E.append(E.copy())
            if (step - settings.burn_in + 1) % settings.thin == 0:
                kept_W.append(W.copy())
                kept_E.append(E.copy())
    Ws = np.concatenate(kept_W)
    Es = np.concatenate(kept_E)
    node = np.tile(np.repeat(np.arange(J), C), settings.samples)
    chain = np.tile(np.tile(np.arange(C), J), settings.samples)
    # The node weights use every post-burn-in state (the ratios are the noisiest part of the estimate and cost
    # one exponent per state); the closure keeps the thinned particles (its Newton step is dense in them).
    n_all = len(all_W)
    every = (np.concatenate(all_W), np.concatenate(all_E), np.tile(np.repeat(np.arange(J), C), n_all),
             np.tile(np.tile(np.arange(C), J), n_all))
    log_z = node_log_z(couplings, X, every[0], every[2], rho_nodes, every[1])
    trapezoid = np.where(np.arange(J) == 0, h, 2.0 * h)  # node 0 once, every other node for ±ρ
    log_node = np.log(trapezoid) - 0.5 * rho_nodes**2 / prior_var + log_z
    return Particles(Ws, node, chain, rho_nodes, log_node, Es, accepted / n_all, every)


def node_log_z(couplings: Couplings, X: np.ndarray, W: np.ndarray, node: np.ndarray, rho_nodes: np.ndarray,
               E: np.ndarray) -> np.ndarray:
    """log Z_j − log Z_0 of the conditional laws, chained by Bennett's acceptance ratio between adjacent nodes."""
    out = np.zeros(len(rho_nodes))
    for j in range(len(rho_nodes) - 1):
        here, there = node == j, node == j + 1
        up = W[here].copy()
        up[:, 0] = rho_nodes[j + 1]
        down = W[there].copy()
        down[:, 0] = rho_nodes[j]
        forward = couplings.exponent(erf(up @ X.T)) - E[here]
        backward = E[there] - couplings.exponent(erf(down @ X.T))
        out[j + 1] = out[j] + _bar_log_ratio(forward, backward)
    return out


def node_masses(log_weights: np.ndarray, node: np.ndarray, J: int) -> np.ndarray:
    """The mass of each node under normalised particle log-weights."""
    w = np.exp(log_weights - logsumexp(log_weights))
    return np.bincount(node, weights=w, minlength=J)
