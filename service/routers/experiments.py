"""``/v1/experiments``: sample the finite network behind a theory, beside the theory's solve of the same spec."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response

from service.deps import get_state
from service.experiments.plan import plan
from service.experiments.schemas import ExperimentAccepted, ExperimentRequest, ExperimentStatus
from service.kernel.ownership import QueueUnavailable
from service.kernel.pages import MAX_INDEX
from service.routers import job_http
from service.state import AppState

router = APIRouter(prefix="/v1", tags=["experiments"])

DETAIL = Query(False, description="Also return the log of the chains' executions.")
POINT = Query(0, ge=0, le=MAX_INDEX,
              description="Index of the point (parameter value) of a learning curve; 0 for an experiment.")


@router.post(
    "/experiments",
    status_code=202,
    response_model=ExperimentAccepted,
    summary="Sample the finite network of a spec (or a learning curve of them) as a job, beside the theory",
    responses={422: {"description": "Invalid spec, sizes or sampler options, a theory without a network, or a size "
                                    "above the instance's limit; the error names the field."},
               **job_http.REFUSALS},
)
def submit_experiment(req: ExperimentRequest, request: Request, state: AppState = Depends(get_state)) -> Any:
    return job_http.accepted(state.experiments, plan(req, state.settings), request,
                             state.settings.max_jobs_per_key, "/v1/experiments", ExperimentAccepted)


@router.api_route(
    "/experiments/{job_id}",
    methods=["GET", "DELETE"],
    response_model=ExperimentStatus,
    response_model_exclude_unset=True,
    summary="GET: status, progress (draws) and result of an experiment. DELETE: cancel it (returns its status).",
    responses={404: {"description": "No such experiment held by this API key."},
               503: {"description": "The job queue is unavailable."}},
)
def experiment(job_id: str, request: Request, detail: bool = DETAIL, state: AppState = Depends(get_state)) -> Any:
    try:
        if request.method == "DELETE" and not state.experiments.cancel(job_id, job_http.owner(request)):
            raise HTTPException(404, detail=f"no experiment {job_id}")
        status = state.experiments.status(job_id, job_http.owner(request), detail=detail)
    except QueueUnavailable as exc:
        raise job_http.unavailable(exc) from None
    if status is None:
        raise HTTPException(404, detail=f"no experiment {job_id}")
    return status


@router.get(
    "/experiments/{job_id}/draws",
    summary="Per-draw series of a finished point: every estimator (bounded, thinned) and the sampler's statistics",
    responses={404: {"description": "No such experiment, or the point is not assembled yet."}},
)
def draws(job_id: str, request: Request, point: int = POINT, state: AppState = Depends(get_state)) -> Any:
    try:
        text = state.experiments.read(job_id, job_http.owner(request), lambda store, key: store.series_text(key, point))
    except QueueUnavailable as exc:
        raise job_http.unavailable(exc) from None
    if text is None:
        raise HTTPException(404, detail=f"no draws of point {point} of experiment {job_id} (yet)")
    return Response(content=text, media_type="application/json")
