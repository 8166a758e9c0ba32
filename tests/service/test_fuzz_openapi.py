"""Schemathesis against the OpenAPI schema: no 5xx, every response matching its schema, on every operation.

Short and seeded (derandomized: the same examples every run, so a failure reproduces and the suite does not pass
or fail by chance): a few examples per operation, on an app with small size limits so that every generated spec
is cheap to solve, and a short per-solve time limit. A longer exploration is the same test with
``SADDLELAB_FUZZ_EXAMPLES`` set (e.g. 200), ``SADDLELAB_FUZZ_RANDOM=1`` and ``SADDLELAB_FUZZ_COVERAGE=1``.
"""

from __future__ import annotations

import os

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance

from service.app import create_app
from tests.service.conftest import settings as app_settings

LIMITS = {
    "kernel_p": 40, "kernel_p_test": 40, "kernel_n0": 40, "kernel_depth": 3,
    "finite_sample_p": 40, "finite_sample_p_test": 40, "finite_sample_d": 40,
    "hciz_depth": 3, "hciz_hermite_terms": 12,
    "mean_field_d": 8, "mean_field_N": 64, "mean_field_P": 32, "mean_field_P_test": 32,
    "mean_field_array_rows": 64, "mean_field_particles": 32, "mean_field_reduced_k": 2,
    "mean_field_particle_steps": 20_000, "mean_field_quadrature_nodes": 2_000,
}

APP = create_app(app_settings(solve_time_limit=1.0, max_sweep_points=5, max_grid_points=9, local_workers=1,
                              limits={k: float(v) for k, v in LIMITS.items()}))
EXAMPLES = int(os.environ.get("SADDLELAB_FUZZ_EXAMPLES", "8"))
RANDOM = os.environ.get("SADDLELAB_FUZZ_RANDOM") == "1"
#: The coverage phase (every boundary of every field, unbounded by max_examples) alone took minutes: on request.
COVERAGE = os.environ.get("SADDLELAB_FUZZ_COVERAGE") == "1"
CONFIG = schemathesis.config.SchemathesisConfig.from_dict(
    {**({} if RANDOM else {"seed": 20261207}), "phases": {"coverage": {"enabled": COVERAGE}}})
schema = schemathesis.openapi.from_asgi("/openapi.json", APP, config=CONFIG)


@schema.parametrize()
@settings(max_examples=EXAMPLES, derandomize=not RANDOM, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
def test_api_never_errors_and_matches_its_schema(case: schemathesis.Case) -> None:
    # Schema-valid requests may still be refused with a 422 on purpose: a field that cannot be
    # swept for this spec, a size above the instance's limit, an activation a depth does not
    # support. Those rules live in the theories, not in the schema; everything else is checked.
    case.call_and_validate(excluded_checks=[positive_data_acceptance], timeout=120)
