"""A small LRU of evaluated states keyed by (order parameters, α).

Newton, the free entropy, the stability margin and the observables all ask for the state of the
same point; the memo makes that one evaluation. Each model holds one (a model belongs to one
problem); the keys are immutable bytes and the map is guarded by a lock all the same, so a model
shared between threads stays consistent.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from threading import Lock
from typing import Generic, TypeVar

import numpy as np

S = TypeVar("S")
MEMO_SIZE = 16


class StateMemo(Generic[S]):
    def __init__(self, size: int = MEMO_SIZE):
        self.size = size
        self._data: OrderedDict[tuple[bytes, float], S] = OrderedDict()
        self._lock = Lock()

    def get(self, x: np.ndarray, alpha: float, compute: Callable[[np.ndarray, float], S]) -> S:
        x = np.asarray(x, dtype=float)
        key = (x.tobytes(), float(alpha))
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
                return hit
        st = compute(x, float(alpha))
        with self._lock:
            self._data[key] = st
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return st
