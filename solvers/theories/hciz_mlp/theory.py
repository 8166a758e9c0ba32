"""The ``hciz_mlp`` theory: order parameters and observables of the shallow and reduced deep models."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.theories.base import Example, Sizes, Theory
from solvers.theories.hciz_mlp.problems import deep_problem, shallow_problem
from solvers.theories.hciz_mlp.spec import HCIZSpec

#: Default size limits (an instance may raise or lower each, ``SADDLELAB_LIMIT_<NAME>``): one order
#: parameter per layer, and one power per Hermite coefficient in every evaluation of the covariance.
SIZE_LIMITS: dict[str, float] = {"hciz_depth": 12, "hciz_hermite_terms": 40}


class HCIZTheory(Theory):
    name: ClassVar[str] = "hciz_mlp"
    summary: ClassVar[str] = (
        "Bayes-optimal learning curves of MLPs with width ∝ d and n ∝ d² samples (Barbier, Camilli, Nguyen, "
        "Pastore, Skerk 2025): replica-symmetric theory with a functional overlap Q(v), moment-matched HCIZ "
        "matrix-denoising term, universal and specialised branches, spinodal and first-order transition; "
        "reduced deep model for L hidden layers."
    )
    spec_model: ClassVar[Any] = HCIZSpec
    sweepable: ClassVar[tuple[str, ...]] = ("alpha", "Delta", "gamma")
    size_limits: ClassVar[dict[str, float]] = SIZE_LIMITS
    examples: ClassVar[tuple[Example, ...]] = (
        Example({"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 3.0, "Delta": 0.1}, "alpha",
                (2.0, 3.5, 5.0)),
        Example({"theory": "hciz_mlp", "activation": {"name": "tanh2", "remove_linear": True, "unit_variance": True},
                 "gamma": 1.0, "alpha": 4.0, "Delta": 0.1, "depth": 2}, "alpha", (3.0, 4.0, 5.0)),
    )

    def sizes(self, spec: BaseModel) -> Sizes:
        """Depth (one order parameter per layer) and the length of a Hermite list set the cost."""
        depth = spec.depth  # type: ignore[attr-defined]
        out: Sizes = {"hciz_depth": (("depth",), float(depth))}
        hermite = getattr(spec.activation, "hermite", None)  # type: ignore[attr-defined]
        if hermite is not None:
            out["hciz_hermite_terms"] = (("activation", "hermite"), float(len(hermite)))
        return out

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        """γ can be swept only when one width ratio describes the network (it then sets every layer)."""
        gamma = spec.gamma  # type: ignore[attr-defined]
        if isinstance(gamma, list) and len(set(gamma)) > 1:
            return ("alpha", "Delta")
        return self.sweepable

    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        assert isinstance(spec, HCIZSpec)
        if parameter not in (None, *self.sweepable):
            raise ValueError(f"{parameter!r} is not sweepable")
        build = deep_problem if spec.depth >= 2 else shallow_problem
        return build(spec, parameter, None if options is None else options.quadrature_order)
