"""A sweep, phase diagram or boundary job computed in this process, line by line, and assembled as a job's result
(what ``GET /v1/jobs/{id}`` returns once it finished): for scripts, benchmarks and figures that need the served
JSON without a server or a backend."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.jobs.lines import assemble_job, fixed_for_row, is_boundary, run_line
from service.schemas import SweepRequest
from service.settings import Settings
from service.sweep_plan import plan


def run_job(request: Mapping[str, Any], settings: Settings | None = None) -> dict[str, Any]:
    """The result of a ``POST /v1/sweeps`` body: every line run here, in order (no time limit but the request's)."""
    payload = plan(SweepRequest.model_validate(dict(request)), settings or Settings(redis_url=None))
    if is_boundary(payload) or len(payload["parameters"]) == 1:
        return assemble_job(payload, [run_line(payload)])
    rows = [run_line(payload, fixed=fixed_for_row(payload, row)) for row in range(len(payload["axes"][0]))]
    return assemble_job(payload, rows)
