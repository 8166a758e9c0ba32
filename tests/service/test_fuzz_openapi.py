"""Schemathesis against the OpenAPI schema: no 5xx, every response matching its schema.

Bounded: a few dozen examples per operation, on an app with small size limits so that every
generated spec is cheap to solve, and a short per-solve time limit.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance

from service.app import create_app
from tests.service.conftest import settings as app_settings

LIMITS = {
    "kernel_p": 40, "kernel_p_test": 40, "kernel_n0": 40, "kernel_depth": 3,
    "finite_sample_p": 40, "finite_sample_p_test": 40, "finite_sample_d": 40,
    "hciz_depth": 3, "hciz_hermite_terms": 12,
}

APP = create_app(app_settings(solve_time_limit=2.0, max_sweep_points=5, max_grid_points=9, local_workers=1,
                              limits={k: float(v) for k, v in LIMITS.items()}))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_never_errors_and_matches_its_schema(case: schemathesis.Case) -> None:
    # Schema-valid requests may still be refused with a 422 on purpose: a field that cannot be
    # swept for this spec, a size above the instance's limit, an activation a depth does not
    # support. Those rules live in the theories, not in the schema; everything else is checked.
    case.call_and_validate(excluded_checks=[positive_data_acceptance], timeout=120)
