"""What every job backend offers the API: the in-process executor and the RQ workers alike.

A job is a sweep or a phase diagram, cut into *lines* (one per row of a phase diagram): the units of work of
this kind. The computation is shared by every key that submits the same sweep; each key holds its own job on
it (:mod:`service.kernel.ownership`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class RawJSON(str):
    """JSON text passed through to the response as it is (a stored result page)."""


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
# result pages
# ---------------------------------------------------------------------------------------------


#: Largest offset, page size or point index a request may name (far beyond any result a limit admits): Redis takes
#: list indices as 64-bit integers, so an unbounded offset would reach it as an error rather than an empty page.
MAX_INDEX = 2**31 - 1


@dataclass(frozen=True)
class Page:
    """Which points of a result (or of the partial points) one response carries."""

    offset: int = 0
    limit: int = 5000
    #: Most bytes of point (or curve) text the page carries beyond its first item (0: no bound).
    max_bytes: int = 0

    def take(self, texts: list[str]) -> list[str]:
        """The page of a list of texts held in memory."""
        out: list[str] = []
        size = 0
        for t in texts[self.offset:self.offset + self.limit]:
            if self.max_bytes and out and size + len(t) > self.max_bytes:
                break
            out.append(t)
            size += len(t)
        return out

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
