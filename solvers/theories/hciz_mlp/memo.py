"""A small LRU of evaluated states keyed by (order parameters, α).

Newton, the free entropy, the stability margin and the observables all ask for the state of the
same point; the memo makes that one evaluation.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

import numpy as np

S = TypeVar("S")
MEMO_SIZE = 16


class StateMemo(Generic[S]):
    def __init__(self, size: int = MEMO_SIZE):
        self.size = size
        self._data: OrderedDict[tuple[bytes, float], S] = OrderedDict()

    def get(self, x: np.ndarray, alpha: float, compute: Callable[[np.ndarray, float], S]) -> S:
        x = np.asarray(x, dtype=float)
        key = (x.tobytes(), float(alpha))
        hit = self._data.get(key)
        if hit is not None:
            return hit
        st = self._data[key] = compute(x, float(alpha))
        if len(self._data) > self.size:
            self._data.popitem(last=False)
        return st
