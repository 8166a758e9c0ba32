"""A run between blocks: sampler state, adapted parameters, RNG key and counters, as plain arrays.

A checkpoint is what an RQ worker stores in Redis between job steps. It holds numpy arrays only (no JAX), and
``to_bytes`` / ``from_bytes`` (or the JSON-safe ``to_dict`` / ``from_dict``) round-trip it exactly, dtype and bits
included, so that a resumed run draws exactly what the uninterrupted run draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from solvers.experiments.codec import decode_array, encode_array, record_bytes, record_from_bytes

FORMAT = "saddlelab-experiment-checkpoint/1"


@dataclass(frozen=True)
class WarmupSummary:
    """What the warmup phase did (its result proper, the adapted parameters, lives in the checkpoint)."""

    steps: int
    gradient_evaluations: int
    divergences: int
    nonfinite: int
    seconds: float


@dataclass(frozen=True)
class Checkpoint:
    """State of every chain after warmup and ``draws_done`` kept draws — or part-way through the warmup.

    Attributes:
        fingerprint: ``SamplerOptions.chain_fingerprint()`` of the run; a resume with other options is refused.
        method: the sampler.
        dim: length of the Target's position vector.
        state: leaves of the BlackJAX sampler state, each batched over chains (leading axis).
        parameters: adapted parameters ("step_size", per chain; "inverse_mass_matrix" for nuts/hmc).
        key: raw data of the sampling PRNG key; the key of step s is derived from it and s alone.
        key_impl: the PRNG implementation of ``key``.
        draws_done: kept draws per chain so far.
        gradient_evaluations, divergences, nonfinite: sampling-phase totals over chains so far.
        seconds: sampling wall time so far (warmup excluded).
        warmup: the warmup phase's summary (``steps``: the warmup steps done so far).
        device: platform of the JAX device the warmup ran on.
        adaptation: while the warmup is under way, the leaves of its adaptation state (batched over chains);
            ``parameters`` then holds what the adaptation would give if it ended now. None once it is done.
    """

    fingerprint: str
    method: str
    dim: int
    state: tuple[np.ndarray, ...]
    parameters: Mapping[str, np.ndarray]
    key: np.ndarray
    key_impl: str
    draws_done: int
    warmup: WarmupSummary
    device: str
    gradient_evaluations: int = 0
    divergences: int = 0
    nonfinite: int = 0
    seconds: float = 0.0
    adaptation: tuple[np.ndarray, ...] | None = None

    @property
    def chains(self) -> int:
        return int(self.parameters["step_size"].shape[0])

    @property
    def warming_up(self) -> bool:
        """The warmup is not finished: sampling resumes it first."""
        return self.adaptation is not None

    def advanced(self, **changes: Any) -> Checkpoint:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (strings, numbers, lists, dicts); arrays keep dtype, shape and exact bits."""
        return {
            "format": FORMAT,
            "fingerprint": self.fingerprint,
            "method": self.method,
            "dim": self.dim,
            "state": [encode_array(a) for a in self.state],
            "parameters": {name: encode_array(a) for name, a in sorted(self.parameters.items())},
            "key": encode_array(self.key),
            "key_impl": self.key_impl,
            "draws_done": self.draws_done,
            "warmup": {
                "steps": self.warmup.steps,
                "gradient_evaluations": self.warmup.gradient_evaluations,
                "divergences": self.warmup.divergences,
                "nonfinite": self.warmup.nonfinite,
                "seconds": self.warmup.seconds,
            },
            "device": self.device,
            "gradient_evaluations": self.gradient_evaluations,
            "divergences": self.divergences,
            "nonfinite": self.nonfinite,
            "seconds": self.seconds,
            "adaptation": None if self.adaptation is None else [encode_array(a) for a in self.adaptation],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checkpoint:
        if data.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} checkpoint (format {data.get('format')!r})")
        w = data["warmup"]
        return cls(
            fingerprint=str(data["fingerprint"]),
            method=str(data["method"]),
            dim=int(data["dim"]),
            state=tuple(decode_array(a) for a in data["state"]),
            parameters={name: decode_array(a) for name, a in data["parameters"].items()},
            key=decode_array(data["key"]),
            key_impl=str(data["key_impl"]),
            draws_done=int(data["draws_done"]),
            warmup=WarmupSummary(
                steps=int(w["steps"]),
                gradient_evaluations=int(w["gradient_evaluations"]),
                divergences=int(w["divergences"]),
                nonfinite=int(w["nonfinite"]),
                seconds=float(w["seconds"]),
            ),
            device=str(data["device"]),
            gradient_evaluations=int(data["gradient_evaluations"]),
            divergences=int(data["divergences"]),
            nonfinite=int(data["nonfinite"]),
            seconds=float(data["seconds"]),
            adaptation=None if data.get("adaptation") is None else tuple(
                decode_array(a) for a in data["adaptation"]),
        )

    def to_bytes(self) -> bytes:
        return record_bytes(self.to_dict())

    @classmethod
    def from_bytes(cls, blob: bytes) -> Checkpoint:
        return cls.from_dict(record_from_bytes(blob))

