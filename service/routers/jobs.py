from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from service.deps import get_state
from service.kernel.ownership import QueueUnavailable
from service.kernel.pages import MAX_INDEX, Page, RawJSON
from service.kernel.waiting import until_ended
from service.routers import job_http
from service.schemas import JobAccepted, JobStatus, SweepRequest
from service.serialize import dumps
from service.state import AppState
from service.sweep_plan import plan

router = APIRouter(prefix="/v1", tags=["sweeps"])

DETAIL = Query(False, description="Also return a page of the points computed so far (`partial`) and the job's "
                                  "executions (worker, process).")
OFFSET = Query(0, ge=0, le=MAX_INDEX, description="Index of the first point of the page (of `result.points`, or of "
                                                   "`partial.points` with ?detail=true); past the last point the page "
                                                   "is empty.")
LIMIT = Query(None, ge=0, le=MAX_INDEX, description="Points per page (at most, and by default, the instance's "
                                                    "result_page_size; 0: none, e.g. to read further pages of curves).")
CURVE_OFFSET = Query(0, ge=0, le=MAX_INDEX, description="Index of the first traced curve of the page (of "
                                                        "`result.curves`); past the last curve the page is empty.")
CURVE_LIMIT = Query(None, ge=0, le=MAX_INDEX, description="Curves per page (at most, and by default, the instance's "
                                                          "result_page_curves; 0: none, e.g. to read further pages of "
                                                          "points).")
#: Longest a status request may be held (``?wait=``).
MAX_WAIT = 30.0
WAIT = Query(0.0, ge=0, le=MAX_WAIT, description="GET: seconds the answer may be held while the job is queued or "
                                                 "running; it comes as soon as the job has ended (finished, failed "
                                                 "or cancelled), else after `wait` seconds with the status then. A "
                                                 "client waiting for a job needs one request per `wait` seconds "
                                                 "instead of polling. A key holds at most max_waits_per_key "
                                                 "requests at once; past that, the answer comes at once.")


@router.post(
    "/sweeps",
    status_code=202,
    response_model=JobAccepted,
    summary="Start a sweep (one parameter) or a phase diagram (two parameters) as a job",
    responses={422: {"description": "Invalid spec, parameter or values; the error names the field."},
               **job_http.REFUSALS},
)
def submit_sweep(req: SweepRequest, request: Request, state: AppState = Depends(get_state)) -> Any:
    return job_http.accepted(state.jobs, plan(req, state.settings), request, state.settings.max_jobs_per_key,
                             "/v1/jobs", JobAccepted)


# One route for both methods, so that a 405 on this path lists both in its Allow header.
@router.api_route(
    "/jobs/{job_id}",
    methods=["GET", "DELETE"],
    response_model=JobStatus,
    summary="GET: status, progress and a page of the result of your job. DELETE: cancel it (returns its status).",
    responses={
        404: {"description": "No such job of this API key (never submitted by it, or its results have expired)."},
        503: {"description": "The job queue (Redis) cannot be used: unreachable, or full."},
    },
)
async def job(job_id: str, request: Request, detail: bool = DETAIL, offset: int = OFFSET, limit: int | None = LIMIT,
              curve_offset: int = CURVE_OFFSET, curve_limit: int | None = CURVE_LIMIT, wait: float = WAIT,
              state: AppState = Depends(get_state)) -> Any:
    owner = job_http.owner(request)
    size, curves = state.settings.result_page_size, state.settings.result_page_curves
    most = state.settings.result_page_bytes
    page = Page(offset, size if limit is None else min(limit, size), most)
    curve_page = Page(curve_offset, curves if curve_limit is None else min(curve_limit, curves), most)
    try:
        if request.method == "DELETE":
            if not await run_in_threadpool(state.jobs.cancel, job_id, owner):
                raise HTTPException(404, detail=f"no job {job_id}")
        elif wait > 0:
            await _until_ended(state, job_id, owner, wait)
        async with state.status_builds:
            body = await run_in_threadpool(_body, state, job_id, owner, detail, page, curve_page)
    except QueueUnavailable as exc:
        raise job_http.unavailable(exc) from None
    if body is None:
        raise HTTPException(404, detail=f"no job {job_id}")
    return Response(content=body, media_type="application/json")


def _body(state: AppState, job_id: str, owner: str | None, detail: bool, page: Page,
          curve_page: Page) -> bytes | None:
    """The job's status as the response's bytes, read and built in the thread pool (a page of a large result is
    megabytes: never on the event loop); None when the owner has no such job. A result page is stored as the JSON
    this route returns: spliced in, never parsed into objects, and validated from the text all the same (a
    response that is not a JobStatus is a bug, answered 500), less the points and curves that were checked when
    they were stored (:attr:`RawJSON.checked`). At most two are built at once (``AppState.status_builds``)."""
    status = state.jobs.status(job_id, owner, detail=detail, page=page, curve_page=curve_page)
    if status is None:
        return None
    raw = {k: v for k, v in status.items() if isinstance(v, RawJSON)}
    head = dumps({k: v for k, v in status.items() if k not in raw})[:-1]
    JobStatus.model_validate_json(head + "".join(f',"{k}":{v.to_validate}' for k, v in raw.items()) + "}")
    return (head + "".join(f',"{k}":{v}' for k, v in raw.items()) + "}").encode()


async def _until_ended(state: AppState, job_id: str, owner: str | None, wait: float) -> None:
    """Hold the request until the job has ended, or for ``wait`` seconds (:mod:`service.kernel.waiting`): with
    the backend's O(1) look, on the event loop where it reads memory, else in the thread pool (Redis)."""
    in_memory = getattr(state.jobs, "ended_in_memory", False)

    async def ended() -> bool:
        if in_memory:
            return bool(state.jobs.ended(job_id, owner))
        return bool(await run_in_threadpool(state.jobs.ended, job_id, owner))

    with state.held.hold(owner) as allowed:
        if not allowed:
            return
        on_end = getattr(state.jobs, "on_end", None)
        if on_end is None:
            await until_ended(ended, wait)
            return
        loop, woken = asyncio.get_running_loop(), asyncio.Event()

        def wake() -> None:  # called from the executor's threads
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile (shutdown): nobody to wake
                loop.call_soon_threadsafe(woken.set)

        stop = on_end(wake)
        try:
            await until_ended(ended, wait, woken)
        finally:
            stop()
