"""What every backend of the job kernel offers the API, for every kind of job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from service.kernel.pages import Page


class JobBackend(Protocol):
    """Submit (deduplicated, bounded per owner), read the status with progress and a result page, cancel: what
    the API asks of a backend (:class:`~service.kernel.local.LocalBackend`,
    :class:`~service.kernel.rq_backend.RQBackend`), whatever the kind of its jobs."""

    #: "local" or "rq".
    backend: str

    def submit(self, payload: dict[str, Any], owner: str | None = None, limit: int = 0) -> tuple[str, bool]:
        """The owner's job for ``payload`` (started, joined or found again): (job id, deduplicated)."""
        ...

    def status(self, job_id: str, owner: str | None = None, detail: bool = False,
               page: Page | None = None, curve_page: Page | None = None) -> dict[str, Any] | None:
        """The job's state as its owner sees it; None when ``owner`` holds no job ``job_id``. A finished result
        (and, with ``detail``, the partial points) is one page of points and one of curves, as :class:`RawJSON`;
        ``page`` and ``curve_page`` describe them."""
        ...

    def ended(self, job_id: str, owner: str | None = None) -> bool:
        """Whether the owner's job has ended (or is not the owner's), in O(1) whatever the job's size."""
        ...

    def read(self, job_id: str, owner: str | None, part: Callable[[Any, str], Any]) -> Any:
        """``part(state, key)`` of the owner's job not cancelled (the kind's store or state, the computation's key);
        None when there is none."""
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
