"""Order parameters and observables of a solution, through the model and state of its bound problem.

Everything here reuses what the problem already holds at the control value p (settings, action,
spectrum): along a sweep in T, N1 or λ1 the eigenbasis is fixed, so a point costs one pass over the
P_test×P test kernel (the renormalised and the NNGP predictions together), O(P) algebra and, for
the weight correlations, one N0×N0 eigenproblem. The NNGP errors are remembered per (T, λ0, λ1),
so a sweep in N1 computes them once. A sweep on one spectrum reports a block of points at once
(:meth:`Reporter.report_many`): their products with the resolvent in one pass over the basis.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence
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

    def report_many(self, points: Sequence[tuple[np.ndarray, float]]) -> list[Report]:
        """:meth:`report` of each point, the points together: their products with the resolvent fitted and
        combined in one pass over the basis, and what each point computes directly (its NNGP posterior at a new T
        included) in one pass over the test kernel. Equal to the points' own reports up to the rounding of those
        matrix products."""
        xs = [np.asarray(x, dtype=float) for x, _ in points]
        ps = [p for _, p in points]
        obs = self._observables_many(xs, ps)
        return [Report(self.order_parameters(x), o) for x, o in zip(xs, obs, strict=True)]

    def order_parameters(self, x: np.ndarray) -> dict[str, Any]:
        if self.model.variant == "mean_corrected":
            return {"Qbar": float(np.exp(x[0])), "Q": float(np.expm1(x[1]))}
        qbar = np.exp(x)
        return {"Qbar": float(qbar[0]) if self.model.depth == 1 else [float(q) for q in qbar]}

    def observables(self, x: np.ndarray, p: float) -> dict[str, Any]:
        return self._observables_many([x], [p])[0]

    def _observables_many(self, xs: Sequence[np.ndarray], ps: Sequence[float]) -> list[dict[str, Any]]:
        # a failed solve is still reported; its observables are undefined, not an error
        out: list[dict[str, Any]] = [dict.fromkeys(OBSERVABLE_KEYS) for _ in xs]
        live = [k for k, (x, p) in enumerate(zip(xs, ps, strict=True))
                if np.isfinite(x).all() and self.problem.usable(p)]
        if not live:
            return out
        try:
            with np.errstate(**IGNORE):
                for k, o in zip(live, self._computed([xs[k] for k in live], [ps[k] for k in live]), strict=True):
                    out[k] = o
        except (*NUMERICAL, ValueError) as exc:
            if not is_numerical(exc):
                raise
            if len(live) > 1:  # each point alone: the error is the failing point's own
                for k in live:
                    out[k] = self._observables_many([xs[k]], [ps[k]])[0]
            else:
                out[live[0]] = {**dict.fromkeys(OBSERVABLE_KEYS), "error": f"{type(exc).__name__}: {exc}"}
        return out

    def _nngp_posterior(self, st: Settings) -> Posterior:
        """Infinite-width prediction (every Q̄ = 1, and Q = 0 for the mean-corrected action)."""
        model = self.model
        scale = model.readout_scale(st)
        if model.variant == "mean_corrected":
            return Posterior(model.spectrum(st), scale, scale, st.T)
        return Posterior(model.spectrum(st, mean_mode=False), scale, 0.0, st.T)

    def _computed(self, xs: Sequence[np.ndarray], ps: Sequence[float]) -> list[dict[str, Any]]:
        """The observables of solutions that exist (finite, at usable control values)."""
        model = self.model
        sts = [self.problem.settings(p) for p in ps]
        # spectra first: a cold one (the nested K_R at a new solution) is an eigendecomposition, which
        # wants every BLAS thread
        kernels = [model.posterior_kernel(st, x) for st, x in zip(sts, xs, strict=True)]
        posts = [Posterior(sp, a, b, st.T) for (sp, a, b), st in zip(kernels, sts, strict=True)]
        # the posteriors in the order the points meet them: each point's own, then the NNGP one at a (T, λ0, λ1)
        # whose error is not known yet
        order: list[Posterior] = []
        point: list[int] = []  # the point each posterior of ``order`` belongs to
        own: list[int] = []
        nngp: dict[tuple[float, float, float], int] = {}
        for k, (post, st) in enumerate(zip(posts, sts, strict=True)):
            own.append(len(order))
            order.append(post)
            point.append(k)
            key = (st.T, st.lambda0, st.lambda1)
            if key not in self._nngp and key not in nngp:
                nngp[key] = len(order)
                order.append(self._nngp_posterior(st))
                point.append(k)
        with one_blas_thread():
            preds = self.products.predictions(order, point)
            known = {key: self._nngp[key] for key in {(st.T, st.lambda0, st.lambda1) for st in sts} - nngp.keys()}
            for key, j in nngp.items():
                known[key] = self._nngp[key] = order[j].errors(preds[j])["generalization_error"]
            while len(self._nngp) > HELD_NNGP:
                self._nngp.popitem(last=False)
            scalar = model.variant == "scalar" and model.depth == 1
            weights = self.products.weight_products(posts) if scalar else [None] * len(posts)
            out = []
            for k, (x, p, st, (sp, a, _), post) in enumerate(zip(xs, ps, sts, kernels, posts, strict=True)):
                err = post.errors(preds[own[k]])
                obs: dict[str, Any] = {
                    "action": float(self.problem.action(p).value(x)),
                    "generalization_error": err["generalization_error"],
                    "generalization_bias2": err["bias2"],
                    "generalization_variance": err["variance"],
                    "generalization_error_nngp": known[(st.T, st.lambda0, st.lambda1)],
                    "train_error": post.train_error(),
                    "test_mean": err["test_mean"],
                    "test_variance": err["test_variance"],
                    "alpha": model.dataset.P / st.N1,
                    "class_distance": None,
                    "weight_correlations": None,
                }
                if scalar:
                    qbar = float(np.exp(x[0]))
                    obs["class_distance"] = class_distance(sp, qbar, a, model.feature_scale(st), st.lambda1, st.T,
                                                           st.N1, post.inverse_diagonal)
                    obs["weight_correlations"] = weight_correlations(
                        sp, qbar, a, st.lambda0, st.lambda1, model.dataset.N0, st.T, st.N1, post.inverse_diagonal,
                        weights[k],
                    )
                out.append(obs)
        return out
