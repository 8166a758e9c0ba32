"""The ``kernel_renormalization`` theory: Pacelli et al. 2023 with the Corti et al. 2025 signatures."""

from __future__ import annotations

from typing import Any, ClassVar, cast

import numpy as np
from pydantic import BaseModel
from threadpoolctl import ThreadpoolController

from solvers.core.catalogue import solve_catalogue
from solvers.core.jsonsafe import json_safe
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.theories.base import Theory
from solvers.theories.kernel_renormalization.model import SWEEPABLE, Model, Settings
from solvers.theories.kernel_renormalization.observables import Posterior, class_distance, weight_correlations
from solvers.theories.kernel_renormalization.problem import NUMERICAL_ERRORS, KernelRenormalizationProblem
from solvers.theories.kernel_renormalization.spec import (
    MAX_DEPTH,
    MAX_N0,
    MAX_P,
    MAX_P_TEST,
    ArraysData,
    KernelRenormalizationSpec,
    TeacherData,
)

_BLAS = ThreadpoolController()

OBSERVABLE_KEYS = (
    "action",
    "generalization_error",
    "generalization_bias2",
    "generalization_variance",
    "generalization_error_nngp",
    "train_error",
    "test_mean",
    "test_variance",
    "alpha",
    "class_distance",
    "weight_correlations",
)


def _spec(spec: BaseModel) -> KernelRenormalizationSpec:
    return cast(KernelRenormalizationSpec, spec)


class KernelRenormalizationTheory(Theory):
    name: ClassVar[str] = "kernel_renormalization"
    summary: ClassVar[str] = (
        "Finite-width Bayesian fully connected networks in the proportional limit: GP regression with the "
        "NNGP kernel renormalised by one order parameter Q̄ per layer (Pacelli et al. 2023), the "
        "class-manifold distance and first-layer weight correlations (Corti et al. 2025)."
    )
    spec_model: ClassVar[Any] = KernelRenormalizationSpec
    sweepable: ClassVar[tuple[str, ...]] = SWEEPABLE
    size_limits: ClassVar[dict[str, float]] = {
        "kernel_p": MAX_P,
        "kernel_p_test": MAX_P_TEST,
        "kernel_n0": MAX_N0,
        "kernel_depth": MAX_DEPTH,
    }

    def sizes(self, spec: BaseModel) -> dict[str, tuple[tuple[str | int, ...], float]]:
        """P×P eigendecomposition, P_test×P cross kernel, P×N0 inputs, one layer map per hidden layer."""
        s = _spec(spec)
        data = s.data
        out: dict[str, tuple[tuple[str | int, ...], float]] = {"kernel_depth": (("depth",), float(s.depth))}
        if isinstance(data, ArraysData):
            out["kernel_p"] = (("data", "arrays", "X"), float(len(data.X)))
            out["kernel_p_test"] = (("data", "arrays", "X_test"), float(len(data.X_test)))
            out["kernel_n0"] = (("data", "arrays", "X"), float(len(data.X[0])))
        else:
            out["kernel_p"] = (("data", data.kind, "P"), float(data.P))
            out["kernel_p_test"] = (("data", data.kind, "P_test"), float(data.P_test))
            if isinstance(data, TeacherData):
                out["kernel_n0"] = (("data", "teacher", "N0"), float(data.N0))
        return out

    def problem(self, spec: BaseModel, parameter: str | None, options: SolverOptions) -> Problem:
        return KernelRenormalizationProblem(Model(_spec(spec)), parameter).build()

    def order_parameters(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        model = Model(_spec(spec))
        x = np.asarray(x, dtype=float)
        if model.variant == "mean_corrected":
            return {"Qbar": float(np.exp(x[0])), "Q": float(np.expm1(x[1]))}
        qbar = np.exp(x)
        return {"Qbar": float(qbar[0]) if model.depth == 1 else [float(q) for q in qbar]}

    def observables(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        model = Model(_spec(spec))
        st = model.settings
        x = np.asarray(x, dtype=float)
        if not np.all(np.isfinite(x)) or not st.valid or model.failure(st) or model.singular_at_zero_temperature(st):
            # a failed solve is still reported; its observables are undefined, not an error
            return dict.fromkeys(OBSERVABLE_KEYS)
        try:
            return self._observables(model, st, x)
        except NUMERICAL_ERRORS as exc:
            return {**dict.fromkeys(OBSERVABLE_KEYS), "error": f"{type(exc).__name__}: {exc}"}

    def _observables(self, model: Model, st: Settings, x: np.ndarray) -> dict[str, Any]:
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            # spectra first: a cold one is an eigendecomposition, which wants every BLAS thread
            sp, a, b = model.posterior_kernel(st, x)
            nngp_post = self._nngp(model, st)
        # The rest is small algebra (matrix-vector products, an N0×N0 eigenproblem): one BLAS thread is
        # as fast, and far faster when the cores are shared, where spinning BLAS threads stall.
        with _BLAS.limit(limits=1, user_api="blas"), np.errstate(
            over="ignore", under="ignore", invalid="ignore", divide="ignore"
        ):
            post = Posterior(sp, a, b, st.T)
            err = post.errors()
            nngp = nngp_post.errors()
            out: dict[str, Any] = {
                "action": float(model.action(st).value(x)),
                "generalization_error": err["generalization_error"],
                "generalization_bias2": err["bias2"],
                "generalization_variance": err["variance"],
                "generalization_error_nngp": nngp["generalization_error"],
                "train_error": post.train_error(),
                "test_mean": err["test_mean"],
                "test_variance": err["test_variance"],
                "alpha": model.dataset.P / st.N1,
                "class_distance": None,
                "weight_correlations": None,
            }
            if model.variant == "scalar" and model.depth == 1:
                qbar = float(np.exp(x[0]))
                out["class_distance"] = class_distance(
                    sp, qbar, a, model.feature_scale(st), st.lambda1, st.T, st.N1
                )
                out["weight_correlations"] = weight_correlations(
                    sp, qbar, a, st.lambda0, st.lambda1, model.dataset.N0, st.T, st.N1
                )
        return out

    @staticmethod
    def _nngp(model: Model, st: Settings) -> Posterior:
        """Infinite-width prediction (every Q̄ = 1, and Q = 0 for the mean-corrected action)."""
        scale = model.readout_scale(st)
        if model.variant == "mean_corrected":
            return Posterior(model.spectrum(st), scale, scale, st.T)
        return Posterior(model.spectrum(st, mean_mode=False), scale, 0.0, st.T)

    def solve(self, spec: BaseModel, options: SolverOptions) -> dict[str, Any]:
        kp = KernelRenormalizationProblem(Model(_spec(spec)), None)
        cat = solve_catalogue(kp.build(), 0.0, options)
        result = self.catalogue_result(spec, cat, 0.0)
        result["diagnostics"].update(self.search_report(kp, 0.0))
        return json_safe(result)

    @staticmethod
    def search_report(kp: KernelRenormalizationProblem, p: float) -> dict[str, Any]:
        """What the exhaustive search saw: how many stationary points, and anything a user must know."""
        model, st = kp.model, kp.settings(p)
        notes: list[str] = []
        found = kp.found.get(float(p))
        failure = model.failure(st)
        if failure:
            notes.append(f"no kernel for these data: {failure}")
        if float(p) in kp.search_errors:
            notes.append(f"the exhaustive search failed: {kp.search_errors[float(p)]}")
        if not failure and model.singular_at_zero_temperature(st):
            notes.append(
                "T = 0 needs an invertible kernel (P ≤ rank K) and this kernel is singular: no closed form; use T > 0."
            )
        if found is not None and len(found) > 1:
            notes.append(
                f"S has {len(found)} stationary points ({sum(s for _, s in found)} stable); every one is a branch."
            )
        if model.variant == "nested":
            notes.append("nested recursion: no exhaustive search; solved from the NNGP and vanilla starts.")
        return {
            "action_form": model.description,
            "stationary_points": None if found is None else len(found),
            "notes": notes,
        }
