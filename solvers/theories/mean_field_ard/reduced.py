"""The reduced solver of a spec: its equations as functions of (x, p), independent of the engine.

``ReducedModel(spec, parameter)`` gives the residual, Jacobian, free entropy, stability margin,
named starts, branch labels, the alignment-onset indicator and the observables at a state x and a
value p of the swept field (the spec's own value when ``parameter`` is None). It builds one
:class:`~solvers.theories.mean_field_ard.population.PopulationParity` per p and memoises it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import ndtr

from solvers.theories.mean_field_ard.activations import Activation
from solvers.theories.mean_field_ard.ard import ARD
from solvers.theories.mean_field_ard.memo import Memo
from solvers.theories.mean_field_ard.population import PopulationParity, Quadrature
from solvers.theories.mean_field_ard.reduced_observables import summary
from solvers.theories.mean_field_ard.reduced_potential import Network
from solvers.theories.mean_field_ard.spec import MeanFieldARDSpec
from solvers.theories.mean_field_ard.student_prior import StudentPrior

#: Fields a reduced sweep may vary continuously.
SWEEPABLE = ("kappa", "N", "sigma_a2", "sigma_w2", "gamma")
#: log(ρ_irr/ρ_rel) above which an ARD state is called aligned (relevant prior 4× wider).
ALIGNED_LOG_RATIO = math.log(4.0)
#: Bounds of log ρ relative to log(d/σ_w²) (the projection keeps Newton iterates in the domain).
LOG_RHO_SPAN = 9.0 * math.log(10.0)
MEMO = 32


class ReducedModel:
    def __init__(self, spec: MeanFieldARDSpec, parameter: str | None = None):
        if parameter not in (None, *SWEEPABLE) and not (parameter == "P" and spec.P is not None):
            raise ValueError(f"{parameter!r} is not sweepable by the reduced solver")
        self.spec = spec
        self.parameter = parameter
        self._pops: Memo[PopulationParity] = Memo(MEMO)
        q = spec.quadrature
        per_unit = spec.model == "mf_ard" and spec.ard_settings.precisions == "per_unit"
        self.quad = Quadrature(q.bulk_per_unit if per_unit else q.bulk, q.bulk_q, q.aligned)

    # ---- the network at p ---------------------------------------------------------------------------
    def value(self, p: float | None) -> dict[str, float]:
        s = self.spec
        vals = {"kappa": s.kappa, "N": float(s.N), "sigma_a2": s.sigma_a2, "sigma_w2": s.sigma_w2, "gamma": s.gamma,
                "P": float("nan") if s.P is None else float(s.P)}
        if self.parameter is not None and p is not None:
            vals[self.parameter] = float(p)
        return vals

    def pop(self, p: float | None) -> PopulationParity:
        """The reduced equations at p (memoised; p = None is the spec's own value)."""
        key = "spec" if p is None else float(p)
        return self._pops.get_or_make(key, lambda: self._build(p))

    def _build(self, p: float | None) -> PopulationParity:
        v = self.value(p)
        s = self.spec
        k = s.target.k  # type: ignore[union-attr]
        net = Network(d=s.d, k=k, N=v["N"], gamma=v["gamma"], kappa=v["kappa"], sigma_a2=v["sigma_a2"],
                      activation=Activation(s.activation))
        ard = unit = None
        if s.model == "mf_ard":
            a = s.ard_settings
            beta0 = a.beta0 if a.beta0 is not None else a.alpha0 * v["sigma_w2"] / s.d
            if a.precisions == "shared":
                ard = ARD(alpha0=a.alpha0, beta0=beta0, N=v["N"], update=a.update, ema=a.ema)
            else:
                unit = StudentPrior(k, s.d - k, a.alpha0, beta0)
        P = None if math.isnan(v["P"]) else v["P"]
        return PopulationParity(net, v["sigma_w2"], ard, self.quad, P=P, unit_prior=unit)

    # ---- equations ------------------------------------------------------------------------------------
    @property
    def shared(self) -> bool:
        """True for MF-ARD with shared precisions (state t, log ρ_rel, log ρ_irr); otherwise the state is t alone
        and the problem has one solution (plain MF, per-unit MF-ARD)."""
        return self.spec.model == "mf_ard" and self.spec.ard_settings.precisions == "shared"

    @property
    def dim(self) -> int:
        return 3 if self.shared else 1

    @property
    def names(self) -> tuple[str, ...]:
        return ("t", "log_rho_relevant", "log_rho_irrelevant") if self.shared else ("t",)

    def residual(self, x: np.ndarray, p: float | None) -> np.ndarray:
        return self.pop(p).residual(x)

    def jacobian(self, x: np.ndarray, p: float | None) -> np.ndarray:
        """The rule's own derivative, consistent with the residual (see PopulationParity.rule_jacobian)."""
        return self.pop(p).rule_jacobian(x)

    def free_entropy(self, x: np.ndarray, p: float | None) -> float:
        return self.pop(p).free_entropy(x)

    def stability(self, x: np.ndarray, p: float | None) -> float:
        return self.pop(p).stability(x)

    def project(self, x: np.ndarray) -> np.ndarray:
        """Keep t in (0, 1] and log ρ within LOG_RHO_SPAN of the isotropic value."""
        y = np.array(x, dtype=float)
        y[0] = min(max(y[0], 1e-12), 1.0)
        if y.size > 1:
            centre = math.log(self.spec.d / self.spec.sigma_w2)
            y[1:] = np.clip(y[1:], centre - LOG_RHO_SPAN, centre + LOG_RHO_SPAN)
        return y

    def starts(self, p: float | None) -> dict[str, np.ndarray]:
        pop = self.pop(p)
        return {"symmetric": pop.symmetric_start(), "aligned": pop.aligned_start(self.spec.seed_asymmetry)}

    def label(self, x: np.ndarray, p: float | None, start: str) -> str:
        """'aligned' / 'symmetric' by the state (relevant prior ≥ 4× wider under shared ARD; m_S ≥ ½ otherwise);
        'unstable' for the saddle between two stable shared-ARD branches."""
        if self.shared:
            if self.stability(x, p) < 0:
                return "unstable"
            return "aligned" if float(x[2] - x[1]) > ALIGNED_LOG_RATIO else "symmetric"
        return "aligned" if 1.0 - float(x[0]) >= 0.5 else "symmetric"

    # ---- events -------------------------------------------------------------------------------------
    def depth_gap(self, x: np.ndarray, p: float | None) -> float | None:
        """min Ũ over the aligned wells minus Ũ at the central well (None without an aligned well)."""
        L = self.pop(p).state(x)
        center = [w.U for w in L.wells if w.kind == "center"]
        aligned = [w.U for w in L.wells if w.kind == "aligned"]
        if not center or not aligned:
            return None
        return float(min(aligned) - center[0])

    def onset_indicator(self, p: float | None) -> float:
        """Plain MF: > 0 while the unaligned state's central well is its deepest, < 0 once an aligned well is deeper."""
        return self.pop(p).onset_indicator()

    # ---- reporting --------------------------------------------------------------------------------------
    def order_parameters(self, x: np.ndarray, p: float | None) -> dict[str, Any]:
        s = summary(self.pop(p), x)
        return {"m_S": s["m_S"], "rho_relevant": s["rho_relevant"], "rho_irrelevant": s["rho_irrelevant"],
                "residual_coefficient": s["t"]}

    def observables(self, x: np.ndarray, p: float | None) -> dict[str, Any]:
        pop = self.pop(p)
        s = summary(pop, x)
        d, k = self.spec.d, pop.net.k
        t = s["t"]
        gap = self.depth_gap(x, p)
        finite = "ek_test_mse" in s
        if finite:
            # EK at finite P: the mean predictor is m_S χ_S plus a dataset-dependent part of variance
            # test − (1 − m_S)², taken Gaussian for the sign error
            spread = max(s["ek_test_mse"] - (1.0 - s["m_S"]) ** 2, 0.0)
            err01 = float(ndtr(-s["m_S"] / math.sqrt(spread))) if spread > 0 else (0.0 if s["m_S"] > 0 else 0.5)
        return {
            # population limit: the residual is t χ_S exactly, so train and test errors coincide
            "test_mse": s["ek_test_mse"] if finite else t * t,
            "train_mse": s["ek_train_mse"] if finite else t * t,
            # f̄ = m_S χ_S: its sign is the target's wherever m_S > 0
            "test_error01": err01 if finite else (0.0 if s["m_S"] > 0 else 0.5),
            "test_error01_gibbs": s["test_error01_gibbs"],
            "chi_SS": s["chi_SS"],
            "m_spurious_max": s["ek_m_spurious_rms"] if finite else 0.0,
            "rho_profile": [s["rho_relevant"]] * k + [s["rho_irrelevant"]] * (d - k),
            "second_moment_relevant": s["second_moment_relevant"],
            "second_moment_irrelevant": s["second_moment_irrelevant"],
            "specialised_fraction": s["specialised_fraction"],
            "aligned_well_mass": s["aligned_well_mass"],
            "kernel_target_eigenvalue": s["lambda_S_over_ridge"],
            "depth_gap": gap,
            "parseval": {"walsh_sum": s["m_S"] ** 2, "mean_f2": s["m_S"] ** 2,
                         "note": "population limit: f̄ = m_S χ_S exactly (sign-flip symmetry)"} if not finite else None,
            **({k: s[k] for k in ("effective_ridge_ratio", "overfitting_factor")} if finite else {}),
            "free_entropy": pop.free_entropy(x),
            "phase": "aligned" if (float(x[2] - x[1]) if x.size > 1 else 0.0) > ALIGNED_LOG_RATIO
            or (x.size == 1 and s["m_S"] >= 0.5) else "symmetric",
        }
