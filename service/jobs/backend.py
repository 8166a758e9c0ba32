"""What every job backend offers the API: the in-process executor and the RQ workers alike.

A job is a sweep or a phase diagram, cut into *lines* (one per row of a phase diagram), whose id
is the canonical hash of its plan, so identical submissions share one computation.
"""

from __future__ import annotations

from typing import Any, Protocol


class JobLimitExceeded(Exception):
    """The owner already has as many unfinished jobs as the instance allows (HTTP 429)."""

    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(
            f"this API key already has {limit} unfinished job(s), the limit of this instance "
            f"(max_jobs_per_key={limit}); wait for one to finish or cancel one with DELETE /v1/jobs/{{id}}"
        )


class QueueUnavailable(Exception):
    """The job queue cannot be reached (HTTP 503)."""


class RawJSON(str):
    """JSON text of a result, passed through to the response as it is."""


ACTIVE = ("queued", "running")


def job_kind(payload: dict[str, Any]) -> str:
    """``sweep``, ``phase_diagram`` (one line per row) or ``boundary`` (traced lines: one line of its own kind)."""
    if payload["method"] == "boundary":
        return "boundary"
    return "phase_diagram" if len(payload["parameters"]) == 2 else "sweep"


def line_total(payload: dict[str, Any]) -> int:
    """Points the job stores (a boundary job: its one result)."""
    if job_kind(payload) == "boundary":
        return 1
    rows = len(payload["axes"][0]) if len(payload["axes"]) == 2 else 1
    return rows * len(payload["axes"][-1])


def line_count(payload: dict[str, Any]) -> int:
    return len(payload["axes"][0]) if job_kind(payload) == "phase_diagram" else 1


class JobBackend(Protocol):
    """Submit (deduplicated, bounded per owner), read the status with progress, cancel."""

    kind: str

    def submit(self, payload: dict[str, Any], owner: str | None = None, limit: int = 0) -> tuple[str, bool]:
        """Start the job of ``payload`` (or find the identical one): (job id, deduplicated)."""
        ...

    def status(self, job_id: str, detail: bool = False, raw_result: bool = False) -> dict[str, Any] | None:
        """The job's state, None when there is no such job."""
        ...

    def cancel(self, job_id: str) -> bool:
        """Stop the job; False when there is no such job."""
        ...

    def active_for(self, owner: str | None) -> int:
        """How many unfinished jobs ``owner`` has."""
        ...

    def shutdown(self) -> None:
        """Release the backend's resources when the service stops."""
        ...
