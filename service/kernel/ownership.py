"""Who holds a job: owners are API keys, seen only as keyed hashes; a job id is a keyed hash of owner and
computation, so nobody derives another key's job id from a spec, and every other key gets 404.

A *computation* is keyed by the canonical hash of what it computes (``payload["key"]``): identical submissions
by any keys share it. A *job* is one owner's handle on it; cancelling withdraws that owner's interest, and the
computation stops only when no owner wants it any more.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.secrets import InstanceSecret

#: The statuses of an unfinished computation.
ACTIVE = ("queued", "running")


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


def owner_tag(owner: str | None, secret: InstanceSecret) -> str:
    """Owners are API keys: only a keyed hash (HMAC under the instance secret) of them is ever stored.
    An open instance has no identities: every anonymous client is the one owner "open"."""
    return "open" if owner is None else secret.tag(f"key:{owner}")


def public_id(tag: str, key: str, secret: InstanceSecret) -> str:
    """The id under which the owner ``tag`` holds the computation ``key``."""
    return secret.tag(f"job:{tag}:{key}")


@dataclass(frozen=True)
class HoldingKeys:
    """Where a kind keeps its holdings in Redis: each job (``<handles>:<job id>``, a hash: the computation's key,
    the owner's tag, whether the owner withdrew) and each owner's jobs (``saddlelab:owner:<tag>:<owned>``, a set),
    for the per-key limit."""

    handles: str
    owned: str

    def handle(self, job_id: str) -> str:
        return f"{self.handles}:{job_id}"

    def owner(self, tag: str) -> str:
        return f"saddlelab:owner:{tag}:{self.owned}"
