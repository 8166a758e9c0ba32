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

#: Target MALA acceptance rate (optimal for MALA in high dimension).
TARGET_ACCEPTANCE = 0.574
#: Robbins–Monro steps whose mean undamped residual decides convergence.
WINDOW = 4
#: The same for the shared precisions. Their fixed point is nearly marginal (the map's slope s₀ ≈ 0.95), so a
#: residual log ρ_new − log ρ is only (1 − s₀) of the distance, and a 4-step window's band of 3 Monte-Carlo errors
#: (16 groups) let ρ stop 5 % (3.5 standard errors of six seeds) short of the reduced solver's fixed point on the
#: 8-cube; over 16 steps the two agree within their errors.
WINDOW_RHO = 16
#: Precisions are kept within this many e-folds of the isotropic d/σ_w²; one step moves log ρ at most this much.
LOG_RHO_SPAN = 20.0
MAX_LOG_RHO_STEP = 0.5


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
    residual: float  # rms of the undamped residual G(f̄) − f̄ (mean over the last WINDOW Robbins–Monro steps)
    mc_error: float  # rms Monte-Carlo standard error of that residual
    iterations: int
    state: ParticleState
    acceptance: float
    particle_steps: int
    seconds: float
    status: str
    history: list[tuple[float, float]] = field(default_factory=list)
    residual_log_rho: float = 0.0  # the same test for log ρ_new − log ρ (MF-ARD)
    mc_error_log_rho: float = 0.0

    def diagnostics(self) -> dict[str, object]:
        return {
            "residual": self.residual,
            "mc_error": self.mc_error,
            "iterations": self.iterations,
            "method": "particles:mala+anderson+robbins-monro",
            "seconds": self.seconds,
            "status": self.status,
            "message": {
                "converged": "Mean undamped residual of the last Robbins–Monro steps within tol plus 3 of its "
                "Monte-Carlo standard errors.",
                "max_iterations": "Outer budget spent before the residual reached its Monte-Carlo error.",
                "nan": "Non-finite particle averages; the last finite iterate is returned.",
                "time_limit": "Time limit reached before the residual reached its Monte-Carlo error.",
            }.get(self.status, self.status),
            "residual_log_rho": self.residual_log_rho,
            "mc_error_log_rho": self.mc_error_log_rho,
            "acceptance": self.acceptance,
            "particle_steps": self.particle_steps,
            "residual_history": [h[0] for h in self.history],
            "mc_error_history": [h[1] for h in self.history],
        }


def _rms(v: np.ndarray) -> float:
    return float(np.sqrt(np.mean(v * v))) if v.size else 0.0


def ard_residual(ard: ARD, rho: np.ndarray, w2_groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The precisions' undamped residual log ρ_new − log ρ, its MC error, and a Newton-like step.

    ρ_new(m) = (a + N/2)/(β₀ + N m/2) with m = ⟨w_j²⟩ ≈ c_j/ρ_j: the map's slope in log ρ is then
    s₀ = (N m/2)/(β₀ + N m/2), close to 1 for a weak hyperprior (a nearly marginal fixed point, which an
    EMA of ρ_new would approach only like s₀^t); the step (log ρ_new − log ρ)/(1 − s₀) solves the
    prior-only linearisation exactly.
    """
    m2 = w2_groups.mean(axis=0)
    R = np.log(ard.precision(m2)) - np.log(rho)
    se = np.log(ard.precision(np.maximum(w2_groups, 1e-300))).std(axis=0, ddof=1) / math.sqrt(w2_groups.shape[0])
    s0 = 0.5 * ard.N * m2 / (ard.beta0 + 0.5 * ard.N * m2)
    return R, se, R / np.maximum(1.0 - s0, 1e-3)


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
    Z = np.array(jax.random.normal(key, (n, d)), dtype=float)
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
    time_limit: float | None = None,
) -> ParticleResult:
    """The fixed point from the named start ('symmetric': NNGP/KRR; 'aligned': seeded relevant weights).

    ``time_limit`` (seconds) ends the outer iteration with status "time_limit" (a result, not an error).
    """
    t0 = time.perf_counter()
    deadline = t0 + time_limit if time_limit is not None else math.inf
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
        # chunks as long as an outer step, so that one compiled kernel serves both phases
        chunk = settings.inner_steps
        for c in range(math.ceil(settings.warmup / chunk)):
            out = run_chains(phys, jax.random.fold_in(base, 10_000 + c), jnp.asarray(W * np.sqrt(rho), dtype), Xj,
                             jnp.asarray(y - fbar, dtype), jnp.asarray(np.sqrt(rho), dtype), jnp.asarray(eps, dtype),
                             chunk, min(settings.average_steps, chunk))
            acceptance = float(out["acceptance"])
            W = np.asarray(out["Z"]) / np.sqrt(rho)
            eps *= math.exp(min(max(2.0 * (acceptance - TARGET_ACCEPTANCE), -1.0), 1.0))
            steps_done += chunk * n
    # ---- outer iteration ----------------------------------------------------------------------------
    # Unknowns v = (f̄ on the training set, log ρ for MF-ARD); both parts are judged on their undamped
    # residuals against their Monte-Carlo errors.
    history: list[tuple[np.ndarray, np.ndarray]] = []
    record: list[tuple[float, float]] = []
    window: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    Phi_prev: np.ndarray | None = _kernel_features(phys, W, X)
    status, res, mc, rm_count = "max_iterations", float("inf"), float("inf"), 0
    res_rho = mc_rho = 0.0
    it = 0
    for it in range(1, settings.outer_iterations + 1):
        if time.perf_counter() > deadline:
            status = "time_limit"
            break
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
        if ard is not None:
            R_rho, se_rho, pre_rho = ard_residual(ard, rho, np.asarray(out["w2_groups"], dtype=float))
        else:
            R_rho = se_rho = pre_rho = np.zeros(0)
        step_res, step_mc = _rms(R), _rms(se)
        in_rm = rm_count > 0 or step_res <= 10.0 * (settings.tol + 3.0 * step_mc)
        if in_rm:
            # Robbins–Monro phase: judge the mean undamped residual of the last WINDOW steps against
            # its own Monte-Carlo error (the steps' noises are independent: fresh MALA moves each time)
            window = [*window[-(WINDOW_RHO - 1):], (R, se, R_rho, se_rho)]
            last = window[-WINDOW:]
            res = _rms(np.mean([w[0] for w in last], axis=0))
            mc = _rms(np.sqrt(np.mean([w[1] ** 2 for w in last], axis=0) / len(last)))
            if ard is not None:
                res_rho = _rms(np.mean([w[2] for w in window], axis=0))
                mc_rho = _rms(np.sqrt(np.mean([w[3] ** 2 for w in window], axis=0) / len(window)))
        else:
            res, mc = step_res, step_mc
            res_rho, mc_rho = _rms(R_rho), _rms(se_rho)
        record.append((res, mc))
        done_f = res <= settings.tol + 3.0 * mc
        done_rho = ard is None or res_rho <= settings.tol_log_rho + 3.0 * mc_rho
        if in_rm and len(window) >= (WINDOW if ard is None else WINDOW_RHO) and done_f and done_rho:
            status = "converged"
            break
        Rt = _precondition(Phi_prev, R)
        Phi_prev = _kernel_features(phys, W, X)
        if not in_rm:
            fbar = _anderson(history, fbar, Rt, settings.anderson_memory)
            history.append((fbar.copy(), Rt.copy()))
            gain = 1.0
        else:
            rm_count += 1
            fbar = fbar + Rt / rm_count**0.6
            gain = 1.0 / rm_count**0.6
        if ard is not None:
            # bounded Newton-like steps: the linearisation ignores the data's feedback on ⟨w²⟩, which
            # near a self-reinforcing branch can make the full step overshoot
            step = gain * ard.ema * np.clip(pre_rho, -MAX_LOG_RHO_STEP, MAX_LOG_RHO_STEP)
            log_rho = np.clip(np.log(rho) + step, np.log(rho0) - LOG_RHO_SPAN, np.log(rho0) + LOG_RHO_SPAN)
            rho = np.exp(log_rho)
    state = ParticleState(W=W, rho=rho, fbar=fbar, step_size=eps)
    return ParticleResult(
        fbar=fbar, converged=status == "converged", residual=res, mc_error=mc, iterations=it, state=state,
        acceptance=acceptance, particle_steps=steps_done, seconds=time.perf_counter() - t0, status=status,
        history=record, residual_log_rho=res_rho, mc_error_log_rho=mc_rho,
    )


def measurements(phys: Physics, state: ParticleState, X: np.ndarray, y: np.ndarray, X_eval: np.ndarray,
                 chi_eval: np.ndarray) -> dict[str, np.ndarray]:
    """Per-particle ⟨a|w⟩, Λ, J_S, Σ and the predictor's per-particle terms on an evaluation set."""
    out = measure(phys, jnp.asarray(state.W * np.sqrt(state.rho)), jnp.asarray(X), jnp.asarray(y - state.fbar),
                  jnp.asarray(X_eval), jnp.asarray(np.sqrt(state.rho)), jnp.asarray(chi_eval))
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}
