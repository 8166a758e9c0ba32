"""Per-draw records of a run: the estimators' values and the sampler's statistics, as numpy arrays."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.experiments.codec import decode_array, encode_array, record_bytes, record_from_bytes

_PER_DRAW = ("logdensity", "acceptance", "divergences", "gradient_evaluations", "nonfinite")


@dataclass(frozen=True)
class Draws:
    """Kept draws ``start, …, start + n − 1`` of every chain (one block, or several concatenated).

    Attributes:
        start: index (per chain, counting kept draws after warmup) of the first draw here.
        estimates: observable name -> array (chains, n, *shape) of the Target's estimators at each kept draw.
        logdensity: (chains, n) log-density at each kept draw.
        acceptance: (chains, n) mean acceptance probability over the ``thin`` steps leading to each draw
            (NaN for the unadjusted methods).
        divergences, gradient_evaluations, nonfinite: (chains, n) counts over those steps.
        positions: (chains, n, dim) positions when asked for (``keep_positions``), else None.
        seconds: wall time spent producing these draws.
        device: platform(s) of the JAX device(s) that produced them ("cpu", "gpu"; comma-separated if several).
    """

    start: int
    estimates: Mapping[str, np.ndarray]
    logdensity: np.ndarray
    acceptance: np.ndarray
    divergences: np.ndarray
    gradient_evaluations: np.ndarray
    nonfinite: np.ndarray
    positions: np.ndarray | None
    seconds: float
    device: str

    @property
    def chains(self) -> int:
        return int(self.logdensity.shape[0])

    @property
    def n(self) -> int:
        return int(self.logdensity.shape[1])

    @property
    def stop(self) -> int:
        return self.start + self.n

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe, exact form (for storing a block between job steps)."""
        return {
            "start": self.start,
            "estimates": {name: encode_array(a) for name, a in sorted(self.estimates.items())},
            **{name: encode_array(getattr(self, name)) for name in _PER_DRAW},
            "positions": None if self.positions is None else encode_array(self.positions),
            "seconds": self.seconds,
            "device": self.device,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Draws:
        return cls(
            start=int(data["start"]),
            estimates={name: decode_array(a) for name, a in data["estimates"].items()},
            **{name: decode_array(data[name]) for name in _PER_DRAW},
            positions=None if data["positions"] is None else decode_array(data["positions"]),
            seconds=float(data["seconds"]),
            device=str(data["device"]),
        )

    def to_bytes(self) -> bytes:
        return record_bytes(self.to_dict())

    @classmethod
    def from_bytes(cls, blob: bytes) -> Draws:
        return cls.from_dict(record_from_bytes(blob))


def concatenate(blocks: Sequence[Draws]) -> Draws:
    """Blocks of one run, in order, as one record; they must be contiguous."""
    if not blocks:
        raise ValueError("no blocks to concatenate")
    for before, after in itertools.pairwise(blocks):
        if after.start != before.stop:
            raise ValueError(f"blocks are not contiguous: draw {before.stop} follows draw {after.start - 1}")
    names = list(blocks[0].estimates)
    if any(list(b.estimates) != names for b in blocks):
        raise ValueError("blocks report different observables")
    keep = blocks[0].positions is not None
    if any((b.positions is not None) != keep for b in blocks):
        raise ValueError("some blocks kept positions and others did not")
    return Draws(
        start=blocks[0].start,
        estimates={name: np.concatenate([b.estimates[name] for b in blocks], axis=1) for name in names},
        **{name: np.concatenate([getattr(b, name) for b in blocks], axis=1) for name in _PER_DRAW},
        positions=np.concatenate([b.positions for b in blocks], axis=1) if keep else None,
        seconds=float(sum(b.seconds for b in blocks)),
        device=",".join(dict.fromkeys(d for b in blocks for d in b.device.split(","))),
    )
