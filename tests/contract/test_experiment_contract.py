"""Every registered theory's experiment, through the Theory object alone: sizes model, check, network, predictions.

For each example spec, either the theory refuses the experiment with an error naming a field of the request,
or: its check reports the sampled dimension, the Target it builds has that dimension and the sizes it reported,
and on every branch of a solve of the same spec the theory predicts estimators the network has, with their
shapes (the comparison the service makes is always name by name).
"""

from __future__ import annotations

import jax
import pytest
from pydantic import TypeAdapter

from service.schemas import ModelSpec
from solvers.core.options import SolverOptions
from solvers.theories import registry
from solvers.theories.base import ExperimentRefused, Theory

SPEC = TypeAdapter(ModelSpec)
CASES = [(name, k) for name, th in sorted(registry().items()) for k in range(len(th.examples))]


@pytest.mark.parametrize(("name", "k"), CASES)
def test_experiment_of_every_example(name: str, k: int) -> None:
    theory = registry()[name]
    spec = SPEC.validate_python(dict(theory.examples[k].spec))
    try:
        sizes_model = theory.experiment_sizes_for(spec)
    except ExperimentRefused as refused:
        assert refused.loc[0] == "model" and refused.loc[1] in type(spec).model_fields, refused.loc
        return
    sizes = sizes_model.model_validate(dict(theory.experiment_example_sizes(spec)))
    declared = theory.check_experiment(spec, sizes)
    assert set(declared) >= {"experiment_parameters"} and set(declared) <= set(theory.experiment_size_limits)
    for loc, value in declared.values():
        assert loc[0] in ("model", "sizes") and value >= 1
    target = theory.experiment(spec, sizes, seed=0)
    assert target.dim == declared["experiment_parameters"][1]
    assert sum(n for _, n in target.sampled) == target.dim
    # shapes of every estimator and derived observable, without evaluating the network
    probe = jax.eval_shape(target.init["prior"], jax.random.PRNGKey(0))
    shapes = jax.eval_shape(target.estimators, probe)
    if target.derived is not None:
        shapes = {**shapes, **jax.eval_shape(target.derived, shapes)}
    catalogue = theory.solve(spec, SolverOptions())
    for branch in [None, *(b.name for b in catalogue.branches if b.converged)]:
        predicted = theory.experiment_predictions(spec, catalogue, sizes, branch)
        assert predicted, (name, branch)
        for key, value in predicted.items():
            assert key in shapes, (name, branch, key)
            assert tuple(getattr(value, "shape", ())) == tuple(shapes[key].shape), (name, branch, key)


def test_a_theory_without_a_network_refuses_naming_the_theory() -> None:
    class Bare(Theory):
        name = "bare"
        summary = "no network"
        spec_model = object

        def problem(self, spec, parameter=None, options=None):  # pragma: no cover - never solved here
            raise NotImplementedError

    with pytest.raises(ExperimentRefused) as refused:
        Bare().experiment_sizes_for(object())  # type: ignore[arg-type]
    assert refused.value.loc == ("model", "theory")


@pytest.mark.parametrize(("name", "k"), CASES)
def test_declared_inits_and_minibatch_are_the_networks(name: str, k: int) -> None:
    theory = registry()[name]
    spec = SPEC.validate_python(dict(theory.examples[k].spec))
    try:
        sizes = theory.experiment_sizes_for(spec).model_validate(dict(theory.experiment_example_sizes(spec)))
    except ExperimentRefused:
        return
    target = theory.experiment(spec, sizes)
    assert set(theory.experiment_inits_for(spec)) == set(target.init)
    assert theory.experiment_minibatch_for(spec) == (target.minibatch_log_likelihood is not None)
