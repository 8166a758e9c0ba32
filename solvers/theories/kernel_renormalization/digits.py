"""The scikit-learn digits images (bundled with the package, no download), loaded once per process.

Both the spec (which checks that a split fits the images of its classes) and the dataset builder read
them, so they live apart from either.
"""

from __future__ import annotations

from functools import cache

import numpy as np


@cache
def digits() -> tuple[np.ndarray, np.ndarray]:
    """(pixels, digit) of every image."""
    from sklearn.datasets import load_digits  # deferred: scikit-learn is slow to import

    bunch = load_digits()
    return np.asarray(bunch.data, dtype=float), np.asarray(bunch.target, dtype=int)


def digits_available(classes: list[int]) -> int:
    """How many images show one of ``classes``."""
    _, target = digits()
    return int(np.isin(target, classes).sum())
