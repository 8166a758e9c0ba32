"""Published numbers of Barbier, Camilli, Nguyen, Pastore & Skerk, as stored by their public code.

Shallow (paper on extensive-width networks, ``statphys-deep-NN/theory/ReplicaFP_L=1.ipynb`` printed output):
ReLU, γ = 1/2, v = 1, Gaussian W, Δ = 0.03. Their universal branch comes from the same closed equation as
ours (only the m_S table differs): agreement to a few 1e-6. Their informative branch stops its damped
iteration (weight 0.2 on the new iterate) once |ΔK*| < 1e-6, which leaves Q slightly above its fixed point:
agreement to 0.5%, with our error always larger, as an early stop from Q = 0.99 implies.

Deep (``deep-tanh/alpha_e.csv``, ``mmse_e.csv``, ``alpha_c.csv``): reduced L-layer model with
σ = (tanh 2x − μ1 x)/√(E tanh² 2x − μ1²), Gaussian W, k_l = d, Δ = 0.1. α_e is their bisection of the
free-entropy difference (tolerance 1e-6, g interpolated from 21 samples); α_c is the smallest α at which
500 undamped iterations from Q = 1 stay away from 0, a lower bound of the true spinodal (slow escape near a
fold), so ours must lie just above it.
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core.options import SolverOptions
from solvers.theories import get
from tests.payloads import solve_json, sweep_json

THEORY = get("hciz_mlp")
OPTIONS = SolverOptions()

RELU_UNIVERSAL = [(0.30970000000000003, 0.05361084240491415), (2.008, 0.018967972961337565),
                  (5.005, 0.014372462235054895), (10.0, 0.012825166385476316)]
RELU_INFORMATIVE = [(0.8591500000000001, 0.02851986874985607), (2.008, 0.012619560187244305),
                    (5.005, 0.0035959472707231543), (10.0, 0.001648366578266558)]

DEEP_ALPHA_E = [1.602195612969808280, 4.976560912560671568, 9.305769617203623056, 14.51154586626216769,
                20.54239369789138436]
DEEP_EPS_E = [0.2163603698419571675, 0.07317015227402834388, 0.05032224061973189499, 0.03971736855301277735,
              0.03331413842870922792]
DEEP_ALPHA_C = [1.473441600799560547, 3.309830188751220703, 5.082645893096923828, 6.841364383697509766,
                8.594293117523193359]
DEEP_ACT = {"name": "tanh2", "remove_linear": True, "unit_variance": True}


def relu(alpha: float) -> dict:
    spec = THEORY.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": "relu", "gamma": 0.5, "alpha": alpha, "Delta": 0.03}
    )
    return solve_json(THEORY, spec, OPTIONS)


@pytest.mark.parametrize(("alpha", "eps"), RELU_UNIVERSAL)
def test_relu_universal_branch(alpha: float, eps: float) -> None:
    res = relu(alpha)
    uni = next(b for b in res["branches"] if b["name"] == "universal")
    assert uni["observables"]["generalization_error"] == pytest.approx(eps, rel=2e-5)


@pytest.mark.parametrize(("alpha", "eps"), RELU_INFORMATIVE)
def test_relu_informative_branch(alpha: float, eps: float) -> None:
    res = relu(alpha)
    spec = [b for b in res["branches"] if b["name"] != "universal" and b["stable"]]
    assert len(spec) == 1
    ours = spec[0]["observables"]["generalization_error"]
    assert ours == pytest.approx(eps, rel=5e-3)
    assert ours >= eps
    # it is the equilibrium: larger free entropy than the universal branch
    assert res["equilibrium"] == spec[0]["name"]


@pytest.mark.parametrize("L", [1, 2, 3, 4, 5])
def test_deep_error_at_the_transition(L: int) -> None:
    spec = THEORY.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": DEEP_ACT, "gamma": 1.0, "alpha": DEEP_ALPHA_E[L - 1], "Delta": 0.1,
         "depth": L}
    )
    res = solve_json(THEORY, spec, OPTIONS)
    spec_branch = next(b for b in res["branches"] if b["name"] == "specialized")
    uni = next(b for b in res["branches"] if b["name"] == "universal")
    assert spec_branch["observables"]["generalization_error"] == pytest.approx(DEEP_EPS_E[L - 1], rel=2e-5)
    assert uni["observables"]["generalization_error"] == pytest.approx(1.0, abs=1e-12)
    # at α_e the two free entropies coincide (to the precision of the authors' bisection)
    assert spec_branch["free_entropy"] == pytest.approx(uni["free_entropy"], abs=1e-5)
    assert spec_branch["observables"]["specialized_layers"] == list(range(1, L + 1))


@pytest.mark.parametrize("L", [1, 2, 3])
def test_deep_transitions_located_by_the_sweep(L: int) -> None:
    spec = THEORY.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": DEEP_ACT, "gamma": 1.0, "alpha": 1.0, "Delta": 0.1, "depth": L}
    )
    lo, hi = 0.9 * DEEP_ALPHA_C[L - 1], 1.05 * DEEP_ALPHA_E[L - 1]
    res = sweep_json(THEORY, spec, "alpha", list(np.linspace(lo, hi, 30)), "continuation", OPTIONS)
    first = [t for t in res["transitions"] if t["kind"] == "first_order"]
    spin = [t for t in res["transitions"] if t["kind"] == "spinodal"]
    assert len(first) == 1 and sorted(first[0]["branches"]) == ["specialized", "universal"]
    assert first[0]["parameter"] == pytest.approx(DEEP_ALPHA_E[L - 1], rel=2e-6)
    assert len(spin) == 1
    assert DEEP_ALPHA_C[L - 1] < spin[0]["parameter"] < DEEP_ALPHA_C[L - 1] * (1 + 2e-3)
