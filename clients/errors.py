"""Typed errors: every HTTP error of a SaddleLab server becomes one, carrying the server's message."""

from __future__ import annotations

from typing import Any


class SaddleLabError(Exception):
    """Base class. ``status_code`` is the HTTP status (None when no response came back)."""

    def __init__(self, message: str, status_code: int | None = None, detail: Any = None):
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.detail = detail


class ConnectionFailed(SaddleLabError):
    """The server could not be reached (or did not answer within the timeout)."""


class InvalidRequest(SaddleLabError):
    """400/422: the spec, parameter or values are invalid. ``errors`` lists each offending field."""

    @property
    def errors(self) -> list[dict[str, Any]]:
        return self.detail if isinstance(self.detail, list) else []


class Unauthorized(SaddleLabError):
    """401: a missing or wrong API key."""


class NotFound(SaddleLabError):
    """404: no such job (or path)."""


class PayloadTooLarge(SaddleLabError):
    """413: the request body exceeds the server's limit."""


class TooManyRequests(SaddleLabError):
    """429: rate limit or the per-key limit of unfinished jobs. ``retry_after`` in seconds when given."""

    def __init__(self, message: str, status_code: int | None = None, detail: Any = None,
                 retry_after: float | None = None):
        super().__init__(message, status_code, detail)
        self.retry_after = retry_after


class ServerError(SaddleLabError):
    """5xx: a fault on the server side."""


class ServiceUnavailable(ServerError):
    """503: a backing service (the job queue) is down; retrying later may succeed."""


class JobFailed(SaddleLabError):
    """A job ended with status ``failed``; ``job`` is its last status."""

    def __init__(self, message: str, job: dict[str, Any]):
        super().__init__(message, None, job.get("error"))
        self.job = job


class JobCancelled(SaddleLabError):
    """A job was cancelled before it finished; ``job`` is its last status."""

    def __init__(self, message: str, job: dict[str, Any]):
        super().__init__(message)
        self.job = job


class JobTimeout(SaddleLabError):
    """Waiting for a job took longer than asked; the job itself goes on (``job_id``)."""

    def __init__(self, message: str, job_id: str):
        super().__init__(message)
        self.job_id = job_id


_BY_STATUS: dict[int, type[SaddleLabError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    404: NotFound,
    413: PayloadTooLarge,
    422: InvalidRequest,
    429: TooManyRequests,
    503: ServiceUnavailable,
}


def describe(detail: Any) -> str:
    """The server's message: FastAPI's ``detail`` string, or one line per invalid field."""
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):
        parts = []
        for err in detail:
            if not isinstance(err, dict):
                parts.append(str(err))
                continue
            loc = [str(x) for x in err.get("loc", []) if x != "body"]
            parts.append(f"{'.'.join(loc) or 'request'}: {err.get('msg', 'invalid')}")
        return "; ".join(parts) or "invalid request"
    return str(detail)


def from_response(status_code: int, body: Any, headers: dict[str, str] | None = None) -> SaddleLabError:
    detail = body.get("detail", body) if isinstance(body, dict) else body
    message = f"{status_code}: {describe(detail)}"
    cls = _BY_STATUS.get(status_code, ServerError if status_code >= 500 else SaddleLabError)
    if cls is TooManyRequests:
        retry = (headers or {}).get("retry-after")
        try:
            after = float(retry) if retry is not None else None
        except ValueError:
            after = None
        return TooManyRequests(message, status_code, detail, retry_after=after)
    return cls(message, status_code, detail)
