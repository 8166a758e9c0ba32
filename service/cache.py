"""Solve cache: Redis when configured, an in-process LRU otherwise.

Values are JSON. A value that no longer parses or validates is treated as a miss and removed,
so a corrupted entry is recomputed rather than served. Identical concurrent requests compute
once (see :mod:`service.singleflight`).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from service.redis_link import RedisLink

log = logging.getLogger("saddlelab.cache")

Validator = Callable[[str, dict[str, Any]], bool]


class Cache(Protocol):
    kind: str

    def get(self, key: str) -> dict[str, Any] | None: ...
    def set(self, key: str, value: dict[str, Any]) -> bool:
        """Store ``value``; False when it could not be stored (the answer is still returned)."""
        ...

    def delete(self, key: str) -> None: ...
    def status(self) -> str | None: ...


class MemoryCache:
    """Bounded, thread-safe LRU of JSON strings (so a hit is an independent copy)."""

    kind = "memory"

    def __init__(self, size: int):
        self.size = max(1, size)
        self._data: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            raw = self._data.get(key)
            if raw is None:
                return None
            self._data.move_to_end(key)
        return _loads(raw)

    def set(self, key: str, value: dict[str, Any]) -> bool:
        raw = json.dumps(value, allow_nan=False)
        with self._lock:
            self._data[key] = raw
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return True

    def delete(self, key: str) -> None:
        with self._lock:
            self._data.pop(key, None)

    def status(self) -> str | None:
        return None

    def __len__(self) -> int:
        return len(self._data)


class RedisCache:
    """JSON values under ``saddlelab:solve:<key>`` with a TTL; degrades to a miss when Redis is down, and to
    an uncached answer when Redis is full."""

    kind = "redis"
    prefix = "saddlelab:solve:"

    def __init__(self, link: RedisLink, ttl: int):
        self.link = link
        self.ttl = ttl

    def get(self, key: str) -> dict[str, Any] | None:
        raw = self.link.call(lambda r: r.get(self.prefix + key), None)
        return None if raw is None else _loads(raw)

    def set(self, key: str, value: dict[str, Any]) -> bool:
        """A write Redis refuses (full, or unreachable) is logged; the caller returns its answer uncached."""
        raw = json.dumps(value, allow_nan=False)
        stored = bool(self.link.call(lambda r: r.set(self.prefix + key, raw, ex=self.ttl), None))
        if not stored:
            why = "Redis is full (maxmemory)" if self.link.full else "Redis is unreachable"
            log.warning("solve %s computed but not cached: %s", key, why)
        return stored

    def delete(self, key: str) -> None:
        self.link.call(lambda r: r.delete(self.prefix + key), None)

    def status(self) -> str | None:
        return self.link.status()


def _loads(raw: str | bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None
