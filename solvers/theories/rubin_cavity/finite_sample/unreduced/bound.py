"""``treatment: "tree_level_unreduced"`` bound to a spec: the closure on one fixed particle set, as an engine problem.

The particles are drawn once per problem, deterministically (the spec's inputs seed and sampler seed), in
``stages`` sample-then-solve stages of the *pilot*: the network at one control value (the spec's own for a solve,
the middle of the range for a sweep in another field) with a *tempered* likelihood variance, ``tempering`` times the
smallest T the particles serve. Stage 1 samples the law at the NNGP kernel; each later stage samples at the previous
stage's solution. The tempered law is broader than every law solved on its particles (feature learning sharpens
as T falls), so reweighting to them keeps most samples; particles drawn at the target T itself do not serve it at
low T (there a stage's solution moves the law further than its particles reach, and repeated stages drift away
instead of settling). The last stage's particles are what the problem is solved on: every law
of the family is a weighting of them (:mod:`.problem`), so x ↦ G(x; p) is one smooth, deterministic map at every
control value p — common random numbers across a sweep — and Newton and arclength continuation apply to it as to
any theory. How well one particle set serves a value far from the pilot is measured at every point: the Kish
fraction of each node's samples the reweighting keeps (``monte_carlo.ess_fraction``), beside the standard errors
from four disjoint groups of chains (``R_stderr``, …).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from solvers.core.blas import one_blas_thread
from solvers.core.problem import Problem
from solvers.core.results import Report
from solvers.core.solve import solve_at
from solvers.theories.rubin_cavity.common.erf_projections import teacher
from solvers.theories.rubin_cavity.common.guards import guarded, guarded_scalar
from solvers.theories.rubin_cavity.common.network import Network, NetworkAt, network_of
from solvers.theories.rubin_cavity.common.observables import learned_fractions
from solvers.theories.rubin_cavity.finite_sample.unreduced.law import Couplings, nngp_kernel
from solvers.theories.rubin_cavity.finite_sample.unreduced.problem import ParticleClosure
from solvers.theories.rubin_cavity.finite_sample.unreduced.sampler import SamplerSettings, node_masses, sample
from solvers.theories.rubin_cavity.finite_sample.unreduced.solve import (
    GROUPS,
    OPTIONS,
    Inputs,
    Setting,
    free_entropy,
    group_log_bases,
    observables,
    pilot_log_z0,
    reweighting_ess,
)
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec

BRANCH = "finite_sample"
#: Observables that carry a Monte-Carlo standard error, reported as ``<name>_stderr`` (name as reported).
WITH_ERRORS = {"R": "R", "b": "b", "c": "c", "b_test": "b_test", "c_test": "c_test",
               "cubic_fraction_test": "learned_fraction_cubic_test", "aligned_fraction": "aligned_fraction"}


def sampler_settings(spec: FiniteSampleSpec) -> SamplerSettings:
    ps = spec.particle_settings
    return SamplerSettings(rho_max=ps.rho_max, nodes=ps.nodes, chains=ps.chains, burn_in=ps.burn_in,
                           samples=ps.samples, thin=ps.thin, seed=ps.seed)


class Unreduced:
    """The particles of one spec, drawn at the pilot value, and the closure, its report and errors at any p."""

    def __init__(self, spec: FiniteSampleSpec, parameter: str | None, pilot_value: float, pilot_T: float):
        self.network_at = NetworkAt(network_of(spec), parameter)
        net = replace(self.network_at(pilot_value), T=pilot_T)
        self.setting = Setting(spec.P, spec.D, net.N, net.s_a2, net.sigma_w2, net.epsilon, spec.P_test, spec.seed)
        self.data = Inputs.of(self.setting)
        self.pilot_T = pilot_T
        with one_blas_thread():  # P × P algebra: one thread is faster, and far faster on shared cores
            self._draw(spec, net)

    def _draw(self, spec: FiniteSampleSpec, net: Network) -> None:
        s, data = self.setting, self.data
        K = nngp_kernel(data.X, data.X, s.sigma_w2, s.N * s.s_a2)
        sampler = sampler_settings(spec)
        stages = spec.particle_settings.stages
        self.stages: list[dict[str, Any]] = []
        for stage in range(stages):
            pilot = Couplings.of(K, data.y, net.T, s.s_a2)
            particles = sample(pilot, data.X, s.sigma_w2, replace(sampler, seed=sampler.seed + 7919 * stage))
            closure = ParticleClosure(particles, data.X, data.y, s.N, s.s_a2)
            if stage == stages - 1:
                break
            res = solve_at(closure.problem(particles.E_pilot), net.T, particles.E_pilot, OPTIONS)
            self.stages.append({"stage": stage + 1, "status": res.status.value, "iterations": res.iterations,
                                "residual": res.residual})
            if not res.converged:
                break  # the next stage samples at the same pilot again, with fresh particles
            K = closure.kernel(res.x)
        self.pilot, self.closure, self.particles = pilot, closure, particles
        self.bases = group_log_bases(s, data, closure, pilot)
        self.log_z0 = pilot_log_z0(s, data, pilot)
        self._phi_test: np.ndarray | None = None
        self._targets: dict[float, Inputs] = {}

    # ---- the closure at a control value ------------------------------------------------------------------------
    def at(self, p: float) -> tuple[Network, Setting, Inputs, ParticleClosure]:
        net = self.network_at(p)
        s = replace(self.setting, N=net.N, s_a2=net.s_a2, epsilon=net.epsilon)
        data = self._inputs(net.epsilon)
        return net, s, data, self.closure.at(net.N, net.s_a2, data.y)

    def _inputs(self, epsilon: float) -> Inputs:
        if epsilon == self.setting.epsilon:
            return self.data
        if epsilon not in self._targets:
            d = self.data
            self._targets = {epsilon: Inputs(d.X, teacher(d.X[:, 0], epsilon), d.Xt, teacher(d.Xt[:, 0], epsilon))}
        return self._targets[epsilon]

    def fixed_point(self, x: np.ndarray, p: float) -> np.ndarray:
        net, _, _, closure = self.at(p)
        with one_blas_thread():
            return closure.fixed_point(x, net.T)

    def jacobian(self, x: np.ndarray, p: float) -> np.ndarray:
        net, _, _, closure = self.at(p)
        with one_blas_thread():
            return closure.jacobian(x, net.T)

    def free_entropy(self, x: np.ndarray, p: float) -> float:
        net, s, data, closure = self.at(p)
        with one_blas_thread():
            return free_entropy(s, data, closure, self.pilot, x, net.T, log_z0=self.log_z0)

    # ---- what a solution reports -------------------------------------------------------------------------------
    def report(self, x: np.ndarray, p: float) -> Report:
        net, s, data, closure = self.at(p)
        with one_blas_thread():
            obs = observables(s, data, closure, x, net.T)
            groups, refit = self._group_estimates(s, data, closure, x, net.T)
        errors = {f"{name}_stderr": float(np.std([g[k] for g in groups], ddof=1) / np.sqrt(GROUPS))
                  for k, name in WITH_ERRORS.items()}
        pts = self.particles
        masses = node_masses(closure.log_base + x, pts.node, len(pts.rho_nodes))
        b, c = obs["b"], obs["c"]
        observables_out: dict[str, Any] = {
            "u": net.u,
            "eta": net.eta,
            **learned_fractions(net.epsilon, b, c),
            **{k: obs[k] for k in ("b_test", "c_test", "train_mse", "test_mse_measured", "aligned_fraction")},
            "learned_fraction_cubic_test": obs["cubic_fraction_test"],
            **errors,
            "weight_covariance": {"parallel": obs["R"], "perpendicular": obs["perpendicular"]},
            "tree_level": {"kappa": net.kappa},
            "monte_carlo": {
                "ess_fraction": reweighting_ess(pts, x, closure),
                "edge_mass": float(masses[-1]),
                "particles": len(x),
                "groups": GROUPS,
                "groups_refit": refit,
                "min_acceptance": float(pts.acceptance.min()),
                "pilot_T": self.pilot_T,
                "pilot_converged": all(st["status"] == "converged" for st in self.stages),
                "note": "standard errors over four disjoint groups of chains (batch means), each group's own node "
                        "weights and its own fixed point; a group whose fixed point does not converge is taken at "
                        "the full solution's exponents (groups_refit counts those that converged)",
            },
        }
        return Report({"b": b, "c": c, "R": obs["R"]}, observables_out)

    def _group_estimates(self, s: Setting, data: Inputs, closure: ParticleClosure, x: np.ndarray,
                         T: float) -> tuple[list[dict[str, float]], int]:
        """One complete estimate per group of chains: its particles, node weights and the closure's fixed point on
        them, solved from the full solution. Re-solving matters: at the solution's exponents a subset's law is not
        at its own fixed point, and its spread then overstates the error (measured at T = 0.1 of the standard
        setting: 5–10 times the spread over sampler seeds, against about that spread when re-solved)."""
        out, refit = [], 0
        for base in self.bases:
            mask = np.isfinite(base)
            sub = closure.subset(mask, base)
            res = solve_at(sub.problem(x[mask]), T, x[mask], OPTIONS)
            refit += bool(res.converged)
            out.append(observables(s, data, sub, res.x if res.converged else x[mask], T))
        return out, refit


def unreduced_problem(spec: FiniteSampleSpec, parameter: str | None, pilot_value: float, lowest_T: float) -> Problem:
    """The engine problem of the unreduced tree level on particles drawn at ``pilot_value`` of the control parameter
    and the likelihood variance ``tempering`` × ``lowest_T``.

    The unknowns are the particles' exponents in one unit, √n times their RMS at the pilot: the engine's step control
    (continuation steps measured in the unknowns and the parameter scaled to its range) assumes unknowns of order
    one, and in this unit the exponents move by about one across a range of T from far above to far below the
    feature-learning onset (measured: 0.9 for T from 2 to 0.1 at D = 30, P = 200), where in their own unit they
    would move by hundreds and the continuation would creep.
    """
    u = Unreduced(spec, parameter, pilot_value, spec.particle_settings.tempering * lowest_T)
    start = u.particles.E_pilot.copy()
    n = len(start)
    unit = math.sqrt(n) * max(1.0, float(np.sqrt(np.mean(start**2))))

    def fixed_point(y: np.ndarray, p: float) -> np.ndarray:
        return u.fixed_point(unit * y, p) / unit

    return Problem(
        residual=None,
        fixed_point=guarded(fixed_point, (n,)),
        jacobian=guarded(lambda y, p: u.jacobian(unit * y, p), (n, n)),  # dG/dx is dimensionless
        free_entropy=guarded_scalar(lambda y, p: u.free_entropy(unit * y, p)),
        dim=n,
        starts=lambda p: {"pilot": start / unit},
        kind="saddle",
        label=lambda y, p, start: BRANCH,
        scale=np.full(n, 1.0 / math.sqrt(n)),
        names=tuple(f"E{i}" for i in range(n)),
        report=lambda y, p: u.report(unit * y, p),
    )
