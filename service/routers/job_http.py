"""What every job route shares: the owner of a request, the answer to a submission, and the kernel's refusals as
HTTP errors."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from service.kernel.ownership import JobLimitExceeded, QueueUnavailable


def owner(request: Request) -> str | None:
    """The API key of the request (None on an open instance): only that key sees or cancels its jobs."""
    return getattr(request.state, "api_key", None)


def unavailable(exc: QueueUnavailable) -> HTTPException:
    return HTTPException(503, detail=f"the job queue is unavailable: {exc}")


def submit(backend: Any, payload: dict[str, Any], request: Request, limit: int) -> tuple[str, bool]:
    """The request owner's job for ``payload`` (job id, deduplicated); 429 past the per-key limit, 503 without
    a queue."""
    try:
        return backend.submit(payload, owner=owner(request), limit=limit)
    except JobLimitExceeded as exc:
        raise HTTPException(429, detail=str(exc)) from None
    except QueueUnavailable as exc:
        raise unavailable(exc) from None


#: What a submission may be refused with besides its own 422, for every kind of job.
REFUSALS: dict[int | str, dict[str, Any]] = {
    429: {"description": "The API key already has max_jobs_per_key unfinished jobs (of this kind)."},
    503: {"description": "The job queue (Redis) cannot be used: unreachable, or full. The message says which."},
}


def accepted(backend: Any, payload: dict[str, Any], request: Request, limit: int, status_url: str,
             model: type[BaseModel]) -> JSONResponse:
    """202: the request owner's job for ``payload`` (``model``: its kind's answer; its status at
    ``<status_url>/<job id>``)."""
    job_id, dedup = submit(backend, payload, request, limit)
    body = model(job_id=job_id, status_url=f"{status_url}/{job_id}", deduplicated=dedup)
    return JSONResponse(status_code=202, content=body.model_dump())
