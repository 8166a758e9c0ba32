"""A bounded, thread-safe LRU of expensive objects built at most once per key (the denoising tables).

Keys are tuples of immutable inputs (floats and strings). Several threads asking for the same missing key
wait for one build; different keys build concurrently.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class BuildOnceCache(Generic[T]):
    def __init__(self, build: Callable[..., T], size: int):
        self._build = build
        self.size = size
        self._data: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[Hashable, threading.Lock] = {}

    def peek(self, key: tuple) -> T | None:
        """The object for ``key`` if it has been built in this process (never builds)."""
        with self._lock:
            return self._data.get(key)

    def get(self, key: tuple) -> T:
        """The object for ``key``, built from ``build(*key)`` on first use."""
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
                return hit
            key_lock = self._building.setdefault(key, threading.Lock())
        with key_lock:  # one build per key even when several threads ask at once
            with self._lock:
                hit = self._data.get(key)
            if hit is not None:
                return hit
            value = self._build(*key)
            with self._lock:
                self._data[key] = value
                self._data.move_to_end(key)
                while len(self._data) > self.size:
                    self._data.popitem(last=False)
                self._building.pop(key, None)
            return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)
