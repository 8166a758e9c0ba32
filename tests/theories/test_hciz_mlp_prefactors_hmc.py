"""The two-hidden-layer network sampled by NUTS decides between the three prefactor forms of the theory.

Setting (benchmarks/hciz_prefactors.py, where the full comparison runs at d = 12…24 and several α): σ₁ ∝ tanh 2x
(μ₁ = 0.915), σ₂ = 0.4x + c He₃/6 (ν₁ = 0.4), γ = (1/2, 1), v = 1, Gaussian weights, Δ = 0.1, α = 4. The
theory's fully specialised branch gives ε* = 0.0341 (derived), 0.124 (ONES notebook, ν₁² in Q̂₂:₁) and 0.0486
(GAUSS notebook, α/γ₂ in Q̂₁); HMC from the teacher tracks that branch. At d = 16 (k₁ = 8, k₂ = 16, n = 1024) the
measured ε* = ½·Gibbs error falls within the finite-size allowance of the derived form and every other form is
more than five standard errors plus that allowance away.
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core.options import SolverOptions
from solvers.theories import get

THEORY = get("hciz_mlp")
SPEC = {"theory": "hciz_mlp", "depth": 2, "activation": [{"name": "tanh2", "unit_variance": True},
                                                        {"hermite": [0.0, 0.4, 0.0, float(np.sqrt(6 * 0.84))]}],
        "gamma": [0.5, 1.0], "readout": "ones", "Delta": 0.1, "alpha": 4.0}
#: Finite-size allowance: at d = 16…24 the measured ε* deviated from the derived form by at most 6 % over two
#: teacher instances (docs/theories/hciz_mlp.md); the forms to be excluded differ by 43 % and 260 %.
FINITE_SIZE = 0.10


def specialised_eps(prefactors: str) -> float:
    """ε* of the stable fully specialised branch at α = 4, traced down from α = 8 by continuation."""
    spec = THEORY.spec_model.model_validate({**SPEC, "alpha": 8.0, "prefactors": prefactors})
    res = THEORY.sweep(spec, "alpha", [8.0, 6.0, 5.0, 4.0], "continuation", SolverOptions(quadrature_order=8))
    point = res["points"][-1]
    return next(b["observables"]["generalization_error"] for b in point["branches"]
                if b["name"] == "specialized" and b["stable"])


@pytest.mark.slow
def test_hmc_follows_the_derived_prefactors() -> None:
    import jax

    from solvers.theories.hciz_mlp.experiment_deep2 import build_experiment, sample_nuts, summarise

    theory = {pf: specialised_eps(pf) for pf in ("derived", "ones_notebook", "gauss_notebook")}
    ex = build_experiment(THEORY.spec_model.model_validate(SPEC), d=16, seed=0)
    res = sample_nuts(ex.target, jax.random.PRNGKey(1000), "teacher", num_warmup=80, num_draws=40, chains=1)
    eps = summarise(res["draws"]["generalization_error"])
    assert int(np.sum(res["sample_stats"]["is_divergent"])) == 0
    se, allowance = eps["stderr"], FINITE_SIZE * theory["derived"]
    assert abs(eps["mean"] - theory["derived"]) < 5 * se + allowance, (eps, theory)
    for other in ("ones_notebook", "gauss_notebook"):
        assert abs(eps["mean"] - theory[other]) > 5 * se + allowance, (other, eps, theory)
