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

Steps 2 and 4, the convergence test and the budget are the engine's noisy fixed-point driver
(:mod:`solvers.core.stochastic_iteration`); this module supplies the estimate, the preconditioner and the
precisions' move (:class:`_Particles`).

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

from solvers.core.stochastic_iteration import Estimate, StochasticSettings, iterate_noisy
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
    particles = _Particles(phys, X, Xj, dtype, y, rho0, rho, W, eps, ard, settings, base)
    # ---- warm-up: tune one isotropic step size in whitened coordinates -----------------------------
    if warm is None:
        particles.warm_up(fbar)
    # ---- outer iteration: the engine's noisy fixed-point driver --------------------------------------
    # Unknowns: f̄ on the training set (moved by the driver) and, for MF-ARD, log ρ (moved here with the
    # driver's gain); both are judged on their undamped residuals against their Monte-Carlo errors.
    out = iterate_noisy(particles, fbar, StochasticSettings(
        tolerances=(settings.tol,) if ard is None else (settings.tol, settings.tol_log_rho),
        windows=(WINDOW,) if ard is None else (WINDOW, WINDOW_RHO),
        max_iterations=settings.outer_iterations, anderson_memory=settings.anderson_memory,
        time_limit=None if time_limit is None else max(0.0, deadline - time.perf_counter())))
    res_rho, mc_rho = (out.residuals[1], out.errors[1]) if ard is not None else (0.0, 0.0)
    state = ParticleState(W=particles.W, rho=particles.rho, fbar=out.x, step_size=particles.eps)
    return ParticleResult(
        fbar=out.x, converged=out.converged, residual=out.residuals[0], mc_error=out.errors[0],
        iterations=out.iterations, state=state, acceptance=particles.acceptance, particle_steps=particles.steps_done,
        seconds=time.perf_counter() - t0, status=out.status, history=out.history, residual_log_rho=res_rho,
        mc_error_log_rho=mc_rho,
    )


class _Particles:
    """The particle estimate of the mean-field map (a :class:`~solvers.core.stochastic_iteration.NoisyMap`): MALA
    chains warm-started from the last positions, G(f̄) averaged over independent particle groups, the previous
    step's particle kernel as preconditioner, and the MF-ARD precisions moved after each step."""

    def __init__(self, phys: Physics, X: np.ndarray, Xj: jax.Array, dtype: object, y: np.ndarray, rho0: np.ndarray,
                 rho: np.ndarray, W: np.ndarray, eps: float, ard: ARD | None, settings: ParticleSpec,
                 base: jax.Array):
        self.phys, self.X, self.Xj, self.dtype, self.y = phys, X, Xj, dtype, y
        self.rho0, self.rho, self.W, self.eps = rho0, rho, W, eps
        self.ard, self.settings, self.base = ard, settings, base
        self.steps_done = 0
        self.acceptance = float("nan")
        self.Phi_prev: np.ndarray | None = None
        self.pre_rho = np.zeros(0)

    def _chains(self, key: jax.Array, r: np.ndarray, steps: int) -> dict:
        out = run_chains(self.phys, key, jnp.asarray(self.W * np.sqrt(self.rho), self.dtype), self.Xj,
                         jnp.asarray(r, self.dtype), jnp.asarray(np.sqrt(self.rho), self.dtype),
                         jnp.asarray(self.eps, self.dtype), steps, min(self.settings.average_steps, steps))
        self.steps_done += steps * self.settings.n
        return out

    def warm_up(self, fbar: np.ndarray) -> None:
        """Tune the step size towards the target acceptance at f̄, in chunks as long as an outer step (so that
        one compiled kernel serves both phases)."""
        chunk = self.settings.inner_steps
        r = self.y - fbar
        for c in range(math.ceil(self.settings.warmup / chunk)):
            out = self._chains(jax.random.fold_in(self.base, 10_000 + c), r, chunk)
            self.acceptance = float(out["acceptance"])
            self.W = np.asarray(out["Z"]) / np.sqrt(self.rho)
            self.eps *= math.exp(min(max(2.0 * (self.acceptance - TARGET_ACCEPTANCE), -1.0), 1.0))

    def estimate(self, fbar: np.ndarray, step: int) -> Estimate | None:
        if self.Phi_prev is None:
            self.Phi_prev = _kernel_features(self.phys, self.W, self.X)
        out = self._chains(jax.random.fold_in(self.base, step), self.y - fbar, self.settings.inner_steps)
        fg = np.asarray(out["f_groups"], dtype=float)
        if not np.all(np.isfinite(fg)):
            return None
        self.W = np.asarray(out["Z"], dtype=float) / np.sqrt(self.rho)
        self.acceptance = float(out["acceptance"])
        R = fg.mean(axis=0) - fbar
        se = fg.std(axis=0, ddof=1) / math.sqrt(GROUPS)
        if self.ard is None:
            return Estimate((R,), (se,))
        R_rho, se_rho, self.pre_rho = ard_residual(self.ard, self.rho, np.asarray(out["w2_groups"], dtype=float))
        return Estimate((R, R_rho), (se, se_rho))

    def precondition(self, R: np.ndarray) -> np.ndarray:
        """(I + M̂)⁻¹ R with the previous step's particle kernel (independent of this step's noise: no bias)."""
        Rt = _precondition(self.Phi_prev, R)
        self.Phi_prev = _kernel_features(self.phys, self.W, self.X)
        return Rt

    def move(self, gain: float) -> None:
        if self.ard is None:
            return
        # bounded Newton-like steps: the linearisation ignores the data's feedback on ⟨w²⟩, which near a
        # self-reinforcing branch can make the full step overshoot
        step = gain * self.ard.ema * np.clip(self.pre_rho, -MAX_LOG_RHO_STEP, MAX_LOG_RHO_STEP)
        log_rho = np.clip(np.log(self.rho) + step, np.log(self.rho0) - LOG_RHO_SPAN, np.log(self.rho0) + LOG_RHO_SPAN)
        self.rho = np.exp(log_rho)


def measurements(phys: Physics, state: ParticleState, X: np.ndarray, y: np.ndarray, X_eval: np.ndarray,
                 chi_eval: np.ndarray) -> dict[str, np.ndarray]:
    """Per-particle ⟨a|w⟩, Λ, J_S, Σ and the predictor's per-particle terms on an evaluation set."""
    out = measure(phys, jnp.asarray(state.W * np.sqrt(state.rho)), jnp.asarray(X), jnp.asarray(y - state.fbar),
                  jnp.asarray(X_eval), jnp.asarray(np.sqrt(state.rho)), jnp.asarray(chi_eval))
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}
