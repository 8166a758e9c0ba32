"""The ``hciz_mlp`` theory: order parameters and observables of the shallow, two-layer and reduced deep models."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

from pydantic import BaseModel

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue
from solvers.theories.base import Example, Predictions, Sizes, Theory
from solvers.theories.hciz_mlp import experiment_sizes
from solvers.theories.hciz_mlp.problems import deep_problem, plane_problem, shallow_problem, two_layer_problem
from solvers.theories.hciz_mlp.quantities import QUANTITIES
from solvers.theories.hciz_mlp.spec import HCIZSpec
from solvers.theories.quantities import QuantityTable
from solvers.theories.two_parameter import field_bounds, lift

if TYPE_CHECKING:
    from solvers.experiments.target import Target

#: Default size limits (an instance may raise or lower each, ``SADDLELAB_LIMIT_<NAME>``): one order
#: parameter per layer, and one power per Hermite coefficient in every evaluation of the covariance.
SIZE_LIMITS: dict[str, float] = {"hciz_depth": 12, "hciz_hermite_terms": 40}
#: σ₂ = 0.4x + c He₃/6 with c² = 6·0.84 (ν₁ = 0.4, E σ₂² = 1): the prefactor comparison's second layer.
_SIGMA2 = {"hermite": [0.0, 0.4, 0.0, math.sqrt(6.0 * 0.84)]}


class HCIZTheory(Theory):
    name: ClassVar[str] = "hciz_mlp"
    start_names: ClassVar[tuple[str, ...]] = (
        "uninformative", "informative", "product_overlap", "first_layer", "first_layer_product")
    summary: ClassVar[str] = (
        "Bayes-optimal learning curves of MLPs with width ∝ d and n ∝ d² samples (Barbier, Camilli, Nguyen, "
        "Pastore, Skerk 2025): replica-symmetric theory with a functional overlap Q(v), moment-matched HCIZ "
        "matrix-denoising term, universal and specialised branches, spinodal and first-order transition; "
        "two hidden layers with a linear component (overlaps Q_1(v2), Q_2(v, v2), product overlap Q_2:1(v) through "
        "a rectangular denoising channel); reduced deep model for L hidden layers."
    )
    spec_model: ClassVar[Any] = HCIZSpec
    quantities: ClassVar[QuantityTable] = QUANTITIES
    sweepable: ClassVar[tuple[str, ...]] = ("alpha", "Delta", "gamma")
    #: None: the one integer field, the depth L, counts layers (one order parameter block per layer).
    real_integers: ClassVar[tuple[str, ...]] = ()
    size_limits: ClassVar[dict[str, float]] = SIZE_LIMITS
    examples: ClassVar[tuple[Example, ...]] = (
        Example({"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 3.0, "Delta": 0.1}, "alpha",
                (2.0, 3.5, 5.0)),
        Example({"theory": "hciz_mlp", "activation": {"name": "tanh2", "remove_linear": True, "unit_variance": True},
                 "gamma": 1.0, "alpha": 4.0, "Delta": 0.1, "depth": 2}, "alpha", (3.0, 4.0, 5.0)),
        Example({"theory": "hciz_mlp", "depth": 2, "activation": [{"name": "tanh2", "unit_variance": True}, _SIGMA2],
                 "gamma": [0.5, 1.0], "alpha": 4.0, "Delta": 0.1}, "alpha", (3.0, 4.0, 5.0)),
    )

    def sizes(self, spec: BaseModel) -> Sizes:
        """Depth (one order parameter per layer) and the length of a Hermite list set the cost (the longest
        list when each layer has its own activation)."""
        depth = spec.depth  # type: ignore[attr-defined]
        out: Sizes = {"hciz_depth": (("depth",), float(depth))}
        act = spec.activation  # type: ignore[attr-defined]
        listed = isinstance(act, list)
        for i, a in enumerate(act if listed else [act]):
            hermite = getattr(a, "hermite", None)
            if hermite is None or len(hermite) <= out.get("hciz_hermite_terms", ((), 0.0))[1]:
                continue
            loc: tuple[str | int, ...] = ("activation", i, "hermite") if listed else ("activation", "hermite")
            out["hciz_hermite_terms"] = (loc, float(len(hermite)))
        return out

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        """γ can be swept only when one width ratio describes the network (it then sets every layer), and
        never for the two-hidden-layer model (one rectangular table per value of γ)."""
        gamma = spec.gamma  # type: ignore[attr-defined]
        if spec.two_layer:  # type: ignore[attr-defined]
            return ("alpha", "Delta")
        if isinstance(gamma, list) and len(set(gamma)) > 1:
            return ("alpha", "Delta")
        return self.sweepable

    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        assert isinstance(spec, HCIZSpec)
        if parameter not in (None, *self.sweepable_for(spec)):
            raise ValueError(f"{parameter!r} is not sweepable for this spec")
        order = None if options is None else options.quadrature_order
        if spec.two_layer:
            return two_layer_problem(spec, parameter, order)
        build = deep_problem if spec.depth >= 2 else shallow_problem
        return build(spec, parameter, order)

    def two_parameter_problem(
        self, spec: BaseModel, parameters: tuple[str, str], options: SolverOptions | None = None
    ) -> Problem:
        """Native: one bound problem over the plane, α an argument of the map and a model per (γ, Δ)."""
        assert isinstance(spec, HCIZSpec)
        pair = self.check_pair(spec, parameters)
        problem = plane_problem(spec, pair, None if options is None else options.quadrature_order)
        bounds = (field_bounds(spec, pair[0]), field_bounds(spec, pair[1]))
        return lift(lambda lam: (problem, lam), problem, pair, bounds)

    # ---- the finite network ---------------------------------------------------------------------
    experiment_sizes: ClassVar[Any] = experiment_sizes.ExperimentSizes
    experiment_inits: ClassVar[tuple[str, ...]] = ("prior", "teacher")
    experiment_minibatch: ClassVar[bool] = True
    experiment_example: ClassVar[Mapping[str, Any]] = {"d": 8, "n_test": 50}

    def check_experiment(self, spec: BaseModel, sizes: BaseModel) -> Sizes:
        return experiment_sizes.check(cast(HCIZSpec, spec), cast(experiment_sizes.ExperimentSizes, sizes))

    def experiment_estimator_sizes(self, spec: BaseModel, sizes: BaseModel) -> Mapping[str, int]:
        sizes_ = cast(experiment_sizes.ExperimentSizes, sizes)
        return experiment_sizes.estimator_sizes(cast(HCIZSpec, spec), sizes_)

    def experiment(self, spec: BaseModel, sizes: BaseModel, seed: int = 0) -> Target:
        from solvers.theories.hciz_mlp.experiment import build_target

        return build_target(cast(HCIZSpec, spec), cast(experiment_sizes.ExperimentSizes, sizes), seed)

    def experiment_predictions(
        self, spec: BaseModel, catalogue: Catalogue, sizes: BaseModel, branch: str | None = None
    ) -> Predictions:
        from solvers.theories.hciz_mlp.experiment import theory_observables

        return theory_observables(catalogue, branch=branch)
