"""The particle solver: the mean-field fixed point on a training set, by MALA particles (Algorithm 1, done well).

Outer unknown: f̄ on the P training points (equivalently the residual r = y − f̄). One outer step

1. samples p_MF(w) ∝ e^{−U_r(w)} with n MALA chains warm-started from the previous positions
   (``particle_sampler.run_chains``), and averages G(f̄) = N^{1−γ} E_p[⟨a|w⟩ φ(w·x_μ)] over the
   last steps, with its Monte-Carlo standard error from independent particle groups;
2. forms the undamped residual R = G(f̄) − f̄ — convergence is judged on it and its MC error;
3. preconditions it with the previous step's particle kernel: R̃ = (I + M̂)⁻¹ R, where
   G = M (y − f̄) with M = (N^{1−2γ}/(κ²P)) E_p[φφᵀ/Λ] (G is linear in r for fixed particles, so
   (I + M)⁻¹ turns the stiff kernel modes — the constant mode of a ReLU has M ~ 10² — into a
   contraction; the previous step's M̂ is independent of the current noise, so it adds no bias);
4. moves f̄ by Anderson mixing of R̃ while far from the fixed point, then by Robbins–Monro steps
   a_t R̃ with a_t ∝ t^{−0.6}, which average the Monte-Carlo noise out.

For MF-ARD the precisions follow ρ ← (1 − η) ρ + η ρ_new(⟨w_j²⟩) after each outer step. Random
numbers come from ``jax.random.fold_in(PRNGKey(seed), step)``: the same stream at every point of a
sweep (common random numbers). Non-convergence within the budget is a result, never an exception.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from solvers.theories.mean_field_ard.ard import ARD
from solvers.theories.mean_field_ard.particle_sampler import GROUPS, Physics, measure, run_chains
from solvers.theories.mean_field_ard.spec import ParticleSpec

#: Target MALA acceptance rate (optimal for MALA in high dimension) and warm-up chunk length.
TARGET_ACCEPTANCE = 0.574
WARMUP_CHUNK = 50
#: Consecutive converged outer steps required before stopping.
CONFIRM = 2


@dataclass
class ParticleState:
    """What a solve leaves behind for a warm start: positions, precisions, f̄, step size."""

    W: np.ndarray
    rho: np.ndarray
    fbar: np.ndarray
    step_size: float


@dataclass
class ParticleResult:
    fbar: np.ndarray
    converged: bool
    residual: float  # rms of the undamped residual G(f̄) − f̄ at the last step
    mc_error: float  # rms Monte-Carlo standard error of G(f̄) at the last step
    iterations: int
    state: ParticleState
    acceptance: float
    particle_steps: int
    seconds: float
    status: str
    history: list[tuple[float, float]] = field(default_factory=list)

    def diagnostics(self) -> dict[str, object]:
        return {
            "residual": self.residual,
            "mc_error": self.mc_error,
            "iterations": self.iterations,
            "method": "particles:mala+anderson+robbins-monro",
            "seconds": self.seconds,
            "status": self.status,
            "message": {
                "converged": "Undamped residual within its Monte-Carlo error (3 standard errors) plus tol.",
                "max_iterations": "Outer budget spent before the residual reached its Monte-Carlo error.",
                "nan": "Non-finite particle averages; the last finite iterate is returned.",
            }.get(self.status, self.status),
            "acceptance": self.acceptance,
            "particle_steps": self.particle_steps,
            "residual_history": [h[0] for h in self.history],
            "mc_error_history": [h[1] for h in self.history],
        }


def _kernel_features(phys: Physics, W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Rows √(N^{1−2γ}/(κ² P n Λ_i)) φ(X w_i): M̂ = ΦᵀΦ (the particle kernel operator on the training set)."""
    Phi = np.asarray(jax.nn.relu(X @ W.T) if phys.activation == "relu" else
                     (jax.scipy.special.erf(X @ W.T) if phys.activation == "erf" else np.tanh(X @ W.T))).T
    S = np.mean(Phi * Phi, axis=1)
    lam = 1.0 / phys.sigma_a2 + S / phys.s
    P, n = X.shape[0], W.shape[0]
    scale = np.sqrt(phys.N ** (1.0 - 2.0 * phys.gamma) / (phys.kappa**2 * P * n * lam))
    return Phi * scale[:, None]


def _precondition(Phi: np.ndarray | None, v: np.ndarray) -> np.ndarray:
    """(I + ΦᵀΦ)⁻¹ v by Woodbury (an n × n solve)."""
    if Phi is None:
        return v
    A = np.eye(Phi.shape[0]) + Phi @ Phi.T
    return v - Phi.T @ np.linalg.solve(A, Phi @ v)


def _anderson(history: list[tuple[np.ndarray, np.ndarray]], f: np.ndarray, R: np.ndarray, memory: int,
              mixing: float = 1.0) -> np.ndarray:
    """Type-II Anderson step on the preconditioned residual (Tikhonov-regularised least squares)."""
    if memory == 0 or len(history) < 1:
        return f + mixing * R
    hist = history[-memory:]
    dF = np.stack([f - h[0] for h in hist], axis=1)
    dR = np.stack([R - h[1] for h in hist], axis=1)
    G = dR.T @ dR
    reg = 1e-8 * np.trace(G) / max(G.shape[0], 1) + 1e-300
    try:
        g = np.linalg.solve(G + reg * np.eye(G.shape[0]), dR.T @ R)
    except np.linalg.LinAlgError:
        return f + mixing * R
    return f + mixing * R - (dF + mixing * dR) @ g


def initial_particles(key: jax.Array, n: int, d: int, relevant: list[int], asymmetry: float | None) -> np.ndarray:
    """Whitened prior draws z ~ N(0, I); an aligned seed multiplies the relevant coordinates by 1/√asymmetry."""
    Z = np.asarray(jax.random.normal(key, (n, d)))
    if asymmetry is not None and relevant:
        Z[:, relevant] /= math.sqrt(asymmetry)
    return Z


def nngp_start(phys: Physics, W: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kernel ridge regression with the prior particles' kernel: f̄ = M(I + M)⁻¹ y, M = ΦᵀΦ (Λ at r = 0)."""
    Phi = _kernel_features(phys, W, X)
    return y - _precondition(Phi, y)


def solve(
    phys: Physics,
    X: np.ndarray,
    y: np.ndarray,
    rho0: np.ndarray,
    ard: ARD | None,
    settings: ParticleSpec,
    start: str,
    relevant: list[int],
    asymmetry: float,
    warm: ParticleState | None = None,
) -> ParticleResult:
    """The fixed point from the named start ('symmetric': NNGP/KRR; 'aligned': seeded relevant weights)."""
    t0 = time.perf_counter()
    n, d = settings.n, X.shape[1]
    base = jax.random.PRNGKey(settings.seed)
    Xj, dtype = jnp.asarray(X), jnp.asarray(X).dtype
    if warm is not None:
        rho = warm.rho.copy()
        W = warm.W.copy()
        fbar = warm.fbar.copy()
        eps = warm.step_size
    else:
        rho = rho0.copy()
        if start == "aligned" and ard is not None:
            rho[relevant] *= asymmetry
        Z0 = initial_particles(jax.random.fold_in(base, 0), n, d, relevant, asymmetry if start == "aligned" else None)
        W = Z0 / np.sqrt(rho0)
        fbar = nngp_start(phys, W, X, y) if start == "symmetric" else np.zeros_like(y)
        eps = 0.5 / math.sqrt(d)
    steps_done = 0
    acceptance = float("nan")
    # ---- warm-up: tune one isotropic step size in whitened coordinates -----------------------------
    if warm is None:
        for c in range(settings.warmup // WARMUP_CHUNK):
            out = run_chains(phys, jax.random.fold_in(base, 10_000 + c), jnp.asarray(W * np.sqrt(rho), dtype), Xj,
                             jnp.asarray(y - fbar, dtype), jnp.asarray(np.sqrt(rho), dtype), jnp.asarray(eps, dtype),
                             WARMUP_CHUNK, 1)
            acceptance = float(out["acceptance"])
            W = np.asarray(out["Z"]) / np.sqrt(rho)
            eps *= math.exp(min(max(2.0 * (acceptance - TARGET_ACCEPTANCE), -1.0), 1.0))
            steps_done += WARMUP_CHUNK * n
    # ---- outer iteration ----------------------------------------------------------------------------
    history: list[tuple[np.ndarray, np.ndarray]] = []
    record: list[tuple[float, float]] = []
    Phi_prev: np.ndarray | None = _kernel_features(phys, W, X)
    status, streak, res, mc, rm_count = "max_iterations", 0, float("inf"), float("inf"), 0
    it = 0
    for it in range(1, settings.outer_iterations + 1):
        r = y - fbar
        out = run_chains(phys, jax.random.fold_in(base, it), jnp.asarray(W * np.sqrt(rho), dtype), Xj,
                         jnp.asarray(r, dtype), jnp.asarray(np.sqrt(rho), dtype), jnp.asarray(eps, dtype),
                         settings.inner_steps, min(settings.average_steps, settings.inner_steps))
        steps_done += settings.inner_steps * n
        fg = np.asarray(out["f_groups"], dtype=float)
        if not np.all(np.isfinite(fg)):
            status = "nan"
            break
        W = np.asarray(out["Z"], dtype=float) / np.sqrt(rho)
        acceptance = float(out["acceptance"])
        G = fg.mean(axis=0)
        se = fg.std(axis=0, ddof=1) / math.sqrt(GROUPS)
        R = G - fbar
        res, mc = float(np.sqrt(np.mean(R * R))), float(np.sqrt(np.mean(se * se)))
        record.append((res, mc))
        if ard is not None:
            m2 = np.asarray(out["w2_groups"], dtype=float).mean(axis=0)
            rho = ard.ema_step(rho, m2)
        converged_now = res <= settings.tol + 3.0 * mc
        streak = streak + 1 if converged_now else 0
        if streak >= CONFIRM:
            status = "converged"
            break
        Rt = _precondition(Phi_prev, R)
        Phi_prev = _kernel_features(phys, W, X)
        if rm_count == 0 and res > 10.0 * (settings.tol + 3.0 * mc):
            new = _anderson(history, fbar, Rt, settings.anderson_memory)
            history.append((fbar.copy(), Rt.copy()))
        else:
            rm_count += 1
            new = fbar + Rt / rm_count**0.6
        fbar = new
    state = ParticleState(W=W, rho=rho, fbar=fbar, step_size=eps)
    return ParticleResult(
        fbar=fbar, converged=status == "converged", residual=res, mc_error=mc, iterations=it, state=state,
        acceptance=acceptance, particle_steps=steps_done, seconds=time.perf_counter() - t0, status=status,
        history=record,
    )


def measurements(phys: Physics, state: ParticleState, X: np.ndarray, y: np.ndarray, X_eval: np.ndarray,
                 chi_eval: np.ndarray) -> dict[str, np.ndarray]:
    """Per-particle ⟨a|w⟩, Λ, J_S, Σ and the predictor's per-particle terms on an evaluation set."""
    out = measure(phys, jnp.asarray(state.W * np.sqrt(state.rho)), jnp.asarray(X), jnp.asarray(y - state.fbar),
                  jnp.asarray(X_eval), jnp.asarray(np.sqrt(state.rho)), jnp.asarray(chi_eval))
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}
