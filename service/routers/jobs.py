from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response

from service.deps import get_state
from service.jobs.backend import JobLimitExceeded, QueueUnavailable, RawJSON
from service.schemas import JobAccepted, JobStatus, SweepRequest
from service.state import AppState
from service.sweep_plan import plan

router = APIRouter(prefix="/v1", tags=["sweeps"])

DETAIL = Query(False, description="Also return the points computed so far (`partial`) and the job's executions.")


def _unavailable(exc: QueueUnavailable) -> HTTPException:
    return HTTPException(503, detail=f"the job queue is unavailable: {exc}")


@router.post(
    "/sweeps",
    status_code=202,
    response_model=JobAccepted,
    summary="Start a sweep (one parameter) or a phase diagram (two parameters) as a job",
    responses={
        422: {"description": "Invalid spec, parameter or values; the error names the field."},
        429: {"description": "The API key already has max_jobs_per_key unfinished jobs."},
        503: {"description": "The job queue (Redis) cannot be reached."},
    },
)
def submit_sweep(req: SweepRequest, request: Request, state: AppState = Depends(get_state)) -> Any:
    payload = plan(req, state.settings)
    owner = getattr(request.state, "api_key", None)
    try:
        job_id, dedup = state.jobs.submit(payload, owner=owner, limit=state.settings.max_jobs_per_key)
    except JobLimitExceeded as exc:
        raise HTTPException(429, detail=str(exc)) from None
    except QueueUnavailable as exc:
        raise _unavailable(exc) from None
    body = JobAccepted(job_id=job_id, status_url=f"/v1/jobs/{job_id}", deduplicated=dedup)
    return JSONResponse(status_code=202, content=body.model_dump())


# One route for both methods, so that a 405 on this path lists both in its Allow header.
@router.api_route(
    "/jobs/{job_id}",
    methods=["GET", "DELETE"],
    response_model=JobStatus,
    summary="GET: status, progress and result of a job. DELETE: cancel it (returns its status).",
    responses={
        404: {"description": "No such job (never submitted, or its results have expired)."},
        503: {"description": "The job queue (Redis) cannot be reached."},
    },
)
def job(job_id: str, request: Request, detail: bool = DETAIL, state: AppState = Depends(get_state)) -> Any:
    try:
        if request.method == "DELETE" and not state.jobs.cancel(job_id):
            raise HTTPException(404, detail=f"no job {job_id}")
        status = state.jobs.status(job_id, detail=detail, raw_result=True)
    except QueueUnavailable as exc:
        raise _unavailable(exc) from None
    if status is None:
        raise HTTPException(404, detail=f"no job {job_id}")
    if isinstance(status.get("result"), RawJSON):
        # A finished result is stored as the JSON this route returns: splice it in, do not parse
        # and re-validate what may be tens of megabytes of phase diagram.
        head = json.dumps({k: v for k, v in status.items() if k != "result"}, allow_nan=False)
        return Response(content=head[:-1] + ',"result":' + status["result"] + "}", media_type="application/json")
    return status

