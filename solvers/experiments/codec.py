"""Exact, JSON-safe encoding of numpy arrays (dtype, shape and bits), for checkpoints and stored blocks."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

import numpy as np


def encode_array(array: np.ndarray) -> dict[str, Any]:
    a = np.ascontiguousarray(array)
    if a.dtype.hasobject:
        raise ValueError("object arrays cannot be encoded")
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode("ascii")}


def decode_array(data: Mapping[str, Any]) -> np.ndarray:
    dtype = np.dtype(data["dtype"])
    if dtype.hasobject:
        raise ValueError("object arrays cannot be decoded")
    raw = base64.b64decode(data["data"], validate=True)
    return np.frombuffer(raw, dtype=dtype).reshape(tuple(int(n) for n in data["shape"])).copy()


def record_bytes(record: Mapping[str, Any]) -> bytes:
    """A record of encoded arrays and plain values as canonical JSON bytes (what Redis stores)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode()


def record_from_bytes(blob: bytes) -> dict[str, Any]:
    return json.loads(blob)
