"""What every job backend offers the API: the in-process executor and the RQ workers alike.

A job is a sweep or a phase diagram, cut into *lines* (one per row of a phase diagram). Two things
are kept apart:

- the **computation**, keyed by the canonical hash of the sweep (``payload["key"]``): identical
  submissions by any keys share it, so it runs once;
- the **job** a key holds: its id is a keyed hash (HMAC under the instance secret) of the owner and
  the sweep, so nobody can derive another key's job id from a spec. Only the key that submitted a
  job sees it (status, points, worker names) and cancels it; any other key gets 404. Cancelling
  withdraws that key's interest; the computation stops only when no key wants it any more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from service.secrets import InstanceSecret


class JobLimitExceeded(Exception):
    """The owner already has as many unfinished jobs as the instance allows (HTTP 429)."""

    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(
            f"this API key already has {limit} unfinished job(s), the limit of this instance "
            f"(max_jobs_per_key={limit}); wait for one to finish or cancel one with DELETE /v1/jobs/{{id}}"
        )


class QueueUnavailable(Exception):
    """The job queue cannot be used now (HTTP 503): Redis unreachable, or full."""


class RawJSON(str):
    """JSON text passed through to the response as it is (a stored result page)."""


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


# ---------------------------------------------------------------------------------------------
# owners and job ids
# ---------------------------------------------------------------------------------------------


def owner_tag(owner: str | None, secret: InstanceSecret) -> str:
    """Owners are API keys: only a keyed hash (HMAC under the instance secret) of them is ever stored.
    An open instance has no identities: every anonymous client is the one owner "open"."""
    return "open" if owner is None else secret.tag(f"key:{owner}")


def public_id(tag: str, key: str, secret: InstanceSecret) -> str:
    """The id under which the owner ``tag`` holds the computation ``key``."""
    return secret.tag(f"job:{tag}:{key}")


# ---------------------------------------------------------------------------------------------
# result pages
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    """Which points of a result (or of the partial points) one response carries."""

    offset: int = 0
    limit: int = 5000

    def describe(self, total: int, returned: int, of: str) -> dict[str, Any]:
        end = self.offset + returned
        return {"of": of, "offset": self.offset, "limit": self.limit, "returned": returned, "total": total,
                "next": end if end < total and self.limit > 0 else None}


def with_points(summary: str, points: list[str], curves: list[str] | None = None) -> RawJSON:
    """A stored result summary (JSON text of an object) with a page of stored point texts spliced in, and a page of
    stored curve texts where the result keeps its curves apart (None: it has none, its summary says why)."""
    head = summary[:-1] + ("," if summary != "{}" else "")
    tail = '"points":[' + ",".join(points) + "]"
    if curves is not None:
        tail += ',"curves":[' + ",".join(curves) + "]"
    return RawJSON(head + tail + "}")


class JobBackend(Protocol):
    """Submit (deduplicated, bounded per owner), read the status with progress and a result page, cancel."""

    kind: str

    def submit(self, payload: dict[str, Any], owner: str | None = None, limit: int = 0) -> tuple[str, bool]:
        """The owner's job for ``payload`` (started, joined or found again): (job id, deduplicated)."""
        ...

    def status(self, job_id: str, owner: str | None = None, detail: bool = False,
               page: Page | None = None, curve_page: Page | None = None) -> dict[str, Any] | None:
        """The job's state as its owner sees it; None when ``owner`` holds no job ``job_id``. A finished result
        (and, with ``detail``, the partial points) is one page of points and one of curves, as :class:`RawJSON`;
        ``page`` and ``curve_page`` describe them."""
        ...

    def cancel(self, job_id: str, owner: str | None = None) -> bool:
        """Withdraw the owner's interest (the computation stops when nobody else wants it); False: no such job."""
        ...

    def active_for(self, owner: str | None) -> int:
        """How many unfinished jobs ``owner`` has."""
        ...

    def shutdown(self) -> None:
        """Release the backend's resources when the service stops."""
        ...
