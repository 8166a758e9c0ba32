"""The best target correlation a single unit reaches (the scale of "specialised")."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from solvers.theories.mean_field_ard.activations import Activation
from solvers.theories.mean_field_ard.network_features import _features
from solvers.theories.mean_field_ard.parity_cube import cube


@lru_cache(maxsize=16)
def best_correlation(activation: str, k: int) -> float:
    """The largest target correlation |J_S|/√Σ a single unit reaches: on the diagonal, noise-free.

    (For ReLU it does not depend on the scale; for a smooth φ the best diagonal scale is taken.)
    """
    act = Activation(activation)
    s = np.geomspace(1e-2, 1e2, 400)
    Y = np.column_stack([np.repeat(s[:, None], k, axis=1), np.full(s.size, math.log(1e-12))])
    f = _features(act, cube(k), Y)
    return float(np.max(np.abs(f.J_S) / np.sqrt(f.Sigma)))
