"""A small thread-safe LRU map (the service solves on worker threads), bounded in entries and optionally in bytes."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    """LRU map of at most ``size`` entries and, when ``weight`` is given, at most ``max_bytes`` of their weights.

    Keys must be immutable values (never ``id()``); ``weight(key, value)`` is the bytes an entry holds.
    """

    def __init__(self, size: int, max_bytes: float | None = None,
                 weight: Callable[[Hashable, V], int] | None = None):
        self.size = size
        self.max_bytes = max_bytes
        self.weight = weight
        self._data: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
                return hit[0]
        value = make()  # outside the lock: building may be slow and may itself use memos
        w = self.weight(key, value) if self.weight is not None else 0
        if self.max_bytes is not None and w > self.max_bytes:
            return value  # too large to keep
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (value, w)
            self._bytes += w
            while len(self._data) > self.size or (self.max_bytes is not None and self._bytes > self.max_bytes):
                _, (_, wv) = self._data.popitem(last=False)
                self._bytes -= wv
        return value
