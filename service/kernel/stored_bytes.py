"""The bytes a computation stores, bounded by the instance's limit (``job_stored_bytes``), on every backend.

Before anything runs, a sweep is refused (422) when its points at their estimated size would pass the limit:
a few kilobytes each, plus ``CHARS_PER_NUMBER`` for every number the theory says one solve carries per branch
beyond its scalars (``Theory.result_numbers``: a predictor at every test point, say). The estimate assumes one
branch; what it cannot see is caught while the sweep runs:

Each stored point's text is counted as it is written (a resumed unit's points are counted once). The first
point of a computation measures what one point weighs: when that times the computation's points would pass the
limit, the computation is refused there — within a second of starting, with the limit and the estimate — rather
than after filling Redis; past the limit in total (points of uneven size), likewise. The computation then fails
with that reason and its stored points are dropped, so its owner's job slot is free at once.
"""

from __future__ import annotations

#: Default limit of the bytes one job stores: a quarter of the compose file's Redis, which every user's jobs and
#: the cache share (the experiments' own limit is the same).
DEFAULT_LIMIT = 512 * 2**20
#: Redis's memory for a stored string beyond its length (allocator size classes, hash entries).
REDIS_OVERHEAD = 1.25
LIMIT_NAME = "job_stored_bytes"


#: Characters of one number of a stored point (its JSON text, with its comma): measured 20.9 on a predictor.
CHARS_PER_NUMBER = 22
#: What a point of scalars weighs (its branches' order parameters, observables, diagnostics): an upper fit.
POINT_BASE = 4096


def estimate(points: int, numbers: float) -> float:
    """Bytes (in Redis) of ``points`` stored points carrying ``numbers`` numbers each beyond their scalars."""
    return points * (POINT_BASE + numbers * CHARS_PER_NUMBER) * REDIS_OVERHEAD


class StoredBytesExceeded(Exception):
    """The computation would store more than the instance allows."""

    def __init__(self, limit: float, estimate: float, measured: bool):
        how = ("its points stored so far" if measured else "its first point times its number of points")
        super().__init__(f"the job would store about {estimate / 2**20:,.1f} MiB ({how}), more than the limit "
                         f"{LIMIT_NAME}={limit:.0f} ({limit / 2**20:,.1f} MiB) of this instance; ask for fewer points "
                         f"or smaller ones")


def check(limit: float, total: int, first: int | None, points: int) -> None:
    """Raise :class:`StoredBytesExceeded` when ``total`` stored bytes (the text of the points stored so far; the
    first point alone weighs ``first``, None when this is not the first) reach past ``limit`` (0: none), or the
    first point times ``points`` would."""
    if not limit:
        return
    if first is not None and first * points * REDIS_OVERHEAD > limit:
        raise StoredBytesExceeded(limit, first * points * REDIS_OVERHEAD, measured=False)
    if total * REDIS_OVERHEAD > limit:
        raise StoredBytesExceeded(limit, total * REDIS_OVERHEAD, measured=True)
