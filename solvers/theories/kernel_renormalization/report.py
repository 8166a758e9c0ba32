"""Order parameters and observables of a solution, through the model and state of its bound problem.

Everything here reuses what the problem already holds at the control value p (settings, action,
spectrum): along a sweep in T, N1 or λ1 the eigenbasis is fixed, so a point costs one pass over the
P_test×P test kernel (the renormalised and the NNGP predictions together), O(P) algebra and, for
the weight correlations, one N0×N0 eigenproblem. The NNGP errors are remembered per (T, λ0, λ1),
so a sweep in N1 computes them once.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any, Protocol

import numpy as np

from solvers.core.blas import one_blas_thread
from solvers.core.errors import NUMERICAL, is_numerical
from solvers.core.results import Report
from solvers.theories.kernel_renormalization.model import Model, Settings
from solvers.theories.kernel_renormalization.observables import Posterior, class_distance, weight_correlations
from solvers.theories.kernel_renormalization.sweep_products import SweepProducts

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
#: NNGP errors remembered per problem.
HELD_NNGP = 8
IGNORE = {"over": "ignore", "under": "ignore", "invalid": "ignore", "divide": "ignore"}


class Reported(Protocol):
    """What a reporter reads of its problem (the problem's state at a control value)."""

    model: Model
    parameter: str | None

    def settings(self, p: float) -> Settings: ...

    def action(self, p: float) -> Any: ...

    def usable(self, p: float) -> bool: ...


class Reporter:
    def __init__(self, problem: Reported) -> None:
        # A proxy: the problem owns its reporter, and a cycle between them would keep the model's data
        # (hundreds of MB at large N0) alive until a full garbage collection, which array sizes never trigger.
        self.problem = weakref.proxy(problem)
        self.model = problem.model
        self._nngp: OrderedDict[tuple[float, float, float], float] = OrderedDict()
        # along a sweep the products with 1/(T + aκ) come from a basis per spectrum; the mean-corrected and nested
        # actions have a rank-one term or a spectrum per solution, and a single solve has nothing to share it with
        self.products = SweepProducts(enabled=problem.parameter is not None and problem.model.variant == "scalar")

    def report(self, x: np.ndarray, p: float) -> Report:
        return Report(self.order_parameters(x), self.observables(x, p))

    def order_parameters(self, x: np.ndarray) -> dict[str, Any]:
        if self.model.variant == "mean_corrected":
            return {"Qbar": float(np.exp(x[0])), "Q": float(np.expm1(x[1]))}
        qbar = np.exp(x)
        return {"Qbar": float(qbar[0]) if self.model.depth == 1 else [float(q) for q in qbar]}

    def observables(self, x: np.ndarray, p: float) -> dict[str, Any]:
        if not np.isfinite(x).all() or not self.problem.usable(p):
            # a failed solve is still reported; its observables are undefined, not an error
            return dict.fromkeys(OBSERVABLE_KEYS)
        try:
            with np.errstate(**IGNORE):
                return self._observables(x, p)
        except (*NUMERICAL, ValueError) as exc:
            if not is_numerical(exc):
                raise
            return {**dict.fromkeys(OBSERVABLE_KEYS), "error": f"{type(exc).__name__}: {exc}"}

    def _nngp_posterior(self, p: float) -> Posterior:
        """Infinite-width prediction (every Q̄ = 1, and Q = 0 for the mean-corrected action)."""
        model, st = self.model, self.problem.settings(p)
        scale = model.readout_scale(st)
        if model.variant == "mean_corrected":
            return Posterior(model.spectrum(st), scale, scale, st.T)
        return Posterior(model.spectrum(st, mean_mode=False), scale, 0.0, st.T)

    def _observables(self, x: np.ndarray, p: float) -> dict[str, Any]:
        model, st = self.model, self.problem.settings(p)
        # spectra first: a cold one (the nested K_R at a new solution) is an eigendecomposition, which
        # wants every BLAS thread
        sp, a, b = model.posterior_kernel(st, x)
        nngp_key = (st.T, st.lambda0, st.lambda1)
        nngp_error = self._nngp.get(nngp_key)
        nngp_post = self._nngp_posterior(p) if nngp_error is None else None
        with one_blas_thread():
            post = Posterior(sp, a, b, st.T)
            if nngp_post is None:
                (pred,) = self.products.predictions([post])
            else:
                pred, nngp_pred = self.products.predictions([post, nngp_post])
                nngp_error = nngp_post.errors(nngp_pred)["generalization_error"]
                self._nngp[nngp_key] = nngp_error
                while len(self._nngp) > HELD_NNGP:
                    self._nngp.popitem(last=False)
            err = post.errors(pred)
            out: dict[str, Any] = {
                "action": float(self.problem.action(p).value(x)),
                "generalization_error": err["generalization_error"],
                "generalization_bias2": err["bias2"],
                "generalization_variance": err["variance"],
                "generalization_error_nngp": nngp_error,
                "train_error": post.train_error(),
                "test_mean": err["test_mean"],
                "test_variance": err["test_variance"],
                "alpha": model.dataset.P / st.N1,
                "class_distance": None,
                "weight_correlations": None,
            }
            if model.variant == "scalar" and model.depth == 1:
                qbar = float(np.exp(x[0]))
                out["class_distance"] = class_distance(sp, qbar, a, model.feature_scale(st), st.lambda1, st.T, st.N1,
                                                       post.inverse_diagonal)
                out["weight_correlations"] = weight_correlations(
                    sp, qbar, a, st.lambda0, st.lambda1, model.dataset.N0, st.T, st.N1, post.inverse_diagonal,
                    self.products.weight_products(post),
                )
        return out
