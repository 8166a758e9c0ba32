"""A least-recently-used map bounded in bytes and in entries, safe under threads.

The caches that pay across requests (data arrays, spectra) hold arrays of up to gigabytes, so an
entry count alone bounds nothing: each entry is weighed by its ``nbytes`` and the least recently
used ones go until the total fits the budget. An entry larger than the whole budget is not kept
at all (the caller holds it for as long as it needs it). Keys must be immutable and describe the
content (never ``id()``), so two different inputs can never share an entry.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from threading import Lock
from typing import Generic, TypeVar

V = TypeVar("V")


class BytesLRU(Generic[V]):
    def __init__(self, max_bytes: int, max_entries: int, nbytes: Callable[[V], int]) -> None:
        self.max_bytes = int(max_bytes)
        self.max_entries = int(max_entries)
        self._nbytes = nbytes
        self._data: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._total = 0
        self._lock = Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            self._data.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, value: V) -> None:
        size = int(self._nbytes(value))
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._total -= old[1]
            if size > self.max_bytes or self.max_entries <= 0:
                return
            self._data[key] = (value, size)
            self._total += size
            while self._total > self.max_bytes or len(self._data) > self.max_entries:
                _, (_, dropped) = self._data.popitem(last=False)
                self._total -= dropped

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._total = 0

    @property
    def nbytes(self) -> int:
        """Bytes held (as weighed by ``nbytes`` when each entry was stored)."""
        with self._lock:
            return self._total

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data
