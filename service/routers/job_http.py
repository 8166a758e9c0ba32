"""What every job route shares: the owner of a request, and the kernel's refusals as HTTP errors."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException, Request

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
