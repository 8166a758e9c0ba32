from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse

from service.deps import get_state
from service.jobs_local import JobLimitExceeded, QueueUnavailable
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


@router.get("/jobs/{job_id}", response_model=JobStatus, summary="Status, progress and result of a job")
def job_status(job_id: str, detail: bool = DETAIL, state: AppState = Depends(get_state)) -> Any:
    try:
        status = state.jobs.status(job_id, detail=detail)
    except QueueUnavailable as exc:
        raise _unavailable(exc) from None
    if status is None:
        raise HTTPException(404, detail=f"no job {job_id}")
    return status


@router.delete("/jobs/{job_id}", response_model=JobStatus, summary="Cancel a job")
def cancel_job(job_id: str, state: AppState = Depends(get_state)) -> Any:
    try:
        if not state.jobs.cancel(job_id):
            raise HTTPException(404, detail=f"no job {job_id}")
        return state.jobs.status(job_id)
    except QueueUnavailable as exc:
        raise _unavailable(exc) from None
