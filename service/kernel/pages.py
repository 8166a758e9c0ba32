"""A page of stored texts (points, curves) read from Redis a few at a time, bounded in bytes as well as in items.

A result's points can be anything from 100 bytes to hundreds of kilobytes each (a predictor at every test
point). A page is therefore cut at ``max_bytes`` of text as well as at its number of items — its first item
always comes, whatever its size, so that a reader makes progress — and it is read in chunks sized from the items
read so far, so that the reading process never holds much more than the page itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.kernel.records import text

#: Most items one read asks for.
MAX_CHUNK = 1000


def _chunk(taken: int, size: int, budget: int, want: int) -> int:
    """Items to ask for next: what fits the rest of the budget at the mean size so far (one at first)."""
    if not budget:
        return min(want, MAX_CHUNK)
    if not taken:
        return 1
    return max(1, min(want, MAX_CHUNK, int((budget - size) * taken / max(size, 1))))


def _keep(out: list[str], items: list[Any], size: int, budget: int) -> tuple[int, bool]:
    """Append ``items`` while they fit ``budget``; (size now, whether the page is full)."""
    for item in items:
        if budget and out and size + len(item) > budget:
            return size, True
        out.append(text(item))
        size += len(item)
    return size, False


def read_list(client: Any, name: str, offset: int, limit: int, max_bytes: int = 0) -> list[str]:
    """Items ``offset`` .. ``offset + limit - 1`` of a list, cut at ``max_bytes`` of text (0: no bound)."""
    out: list[str] = []
    size, at = 0, offset
    while len(out) < limit:
        n = _chunk(len(out), size, max_bytes, limit - len(out))
        items = client.lrange(name, at, at + n - 1)
        size, full = _keep(out, items, size, max_bytes)
        if full or len(items) < n:
            break
        at += n
    return out


def read_points(client: Any, name: str, indices: list[int], max_bytes: int = 0, first: bool = True) -> list[str]:
    """The texts of a hash's fields ``indices`` (in that order), cut at ``max_bytes`` of text (0: no bound);
    ``first``: the first one comes whatever its size (False: the page already has items)."""
    out: list[str] = []
    size, at = 0, 0
    while at < len(indices):
        n = _chunk(len(out), size, max_bytes, len(indices) - at)
        items = [v for v in client.hmget(name, [str(i) for i in indices[at:at + n]]) if v is not None]
        if not first and not out and max_bytes and items and len(items[0]) > max_bytes:
            break
        size, full = _keep(out, items, size, max_bytes)
        if full:
            break
        at += n
    return out


class RawJSON(str):
    """JSON text passed through to the response as it is (a stored result page).

    ``checked``: the same text without the items that were checked against the contract when they were stored (their
    lists left empty), which is all that a response still has to validate of it; None: validate the whole text.
    """

    checked: str | None = None

    @property
    def to_validate(self) -> str:
        return self if self.checked is None else self.checked


def partial_points(points: list[str], checked: bool = False) -> RawJSON:
    """``{"points": [...]}`` of stored point texts (a job's points so far); ``checked``: each was checked against
    the contract when it was stored."""
    out = RawJSON('{"points":[' + ",".join(points) + "]}")
    if checked:
        out.checked = '{"points":[]}'
    return out




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


def with_points(summary: str, points: list[str], curves: list[str] | None = None, checked: bool = False) -> RawJSON:
    """A stored result summary (JSON text of an object) with a page of stored point texts spliced in, and a page of
    stored curve texts where the result keeps its curves apart (None: it has none, its summary says why).
    ``checked``: each point and curve was checked against the contract when it was stored."""
    head = summary[:-1] + ("," if summary != "{}" else "")
    tail = '"points":[' + ",".join(points) + "]"
    if curves is not None:
        tail += ',"curves":[' + ",".join(curves) + "]"
    out = RawJSON(head + tail + "}")
    if checked:
        out.checked = with_points(summary, [], None if curves is None else [])
    return out
