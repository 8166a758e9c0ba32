"""SamplerOptions: strict validation with messages naming the problem; the package imports without JAX."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from solvers.experiments import SamplerOptions


def test_defaults_and_round_trip():
    options = SamplerOptions()
    assert (options.method, options.chains, options.rhat_max, options.ess_bulk_min) == ("nuts", 4, 1.01, 400.0)
    assert SamplerOptions(**options.model_dump()) == options
    assert SamplerOptions.model_validate_json(options.model_dump_json()) == options
    langevin = SamplerOptions(method="langevin", learning_rate=1e-3, temperature=0.5)
    assert langevin.langevin_step == pytest.approx(5e-4)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"method": "gibbs"}, "method"),
        ({"chains": 0}, "chains"),
        ({"chains": 2.0}, "chains"),
        ({"draws": "100"}, "draws"),
        ({"step_size": float("nan")}, "step_size"),
        ({"step_size": float("inf")}, "step_size"),
        ({"unknown": 1}, "unknown"),
        ({"method": "langevin"}, "needs step_size"),
        ({"method": "sgld", "step_size": 1e-3}, "batch_size"),
        ({"method": "nuts", "batch_size": 10}, "batch_size"),
        ({"method": "mala", "warmup": 0}, "warmup = 0 needs step_size"),
        ({"method": "langevin", "learning_rate": 1e-3}, "go together"),
        ({"method": "nuts", "learning_rate": 1e-3, "temperature": 1.0}, "langevin and sgld"),
        ({"method": "langevin", "step_size": 1e-3, "learning_rate": 1e-3, "temperature": 1.0}, "not both"),
        ({"draws": 10_000_000, "thin": 1000}, "must not exceed"),
        ({"target_acceptance": 1.0}, "target_acceptance"),
        ({"rhat_max": 1.0}, "rhat_max"),
    ],
)
def test_invalid_options_are_refused(fields, message):
    with pytest.raises(ValidationError, match=message):
        SamplerOptions(**fields)


def test_options_are_frozen():
    with pytest.raises(ValidationError):
        SamplerOptions().chains = 3  # type: ignore[misc]


def test_importing_solvers_does_not_import_jax():
    code = (
        "import sys, solvers, solvers.experiments\n"
        "from solvers.experiments import SamplerOptions, ExperimentResult, posterior_of\n"
        "assert not {'jax', 'arviz_base', 'arviz_stats', 'xarray'} & set(sys.modules), sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
