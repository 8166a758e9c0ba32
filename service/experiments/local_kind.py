"""Experiment chains as a kind of job on the embedded executor (:mod:`service.kernel.local`): state in memory.

Every chain of every point is one unit (``"<point>:<chain>"``), run in a thread of the API process; chains of one
point share one network and its compiled samplers. Checkpoints and blocks are kept in memory
(:class:`~service.experiments.store.MemoryStore`), so a failed, cancelled or time-limited experiment submitted
again resumes its chains; nothing survives a restart of the process.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from service.experiments.runner import assemble_point, finalize, n_chains, n_points, run_chain
from service.experiments.store import MemoryStore
from service.experiments.units import ChainUnits, experiment_kind, point_chain, unit_of
from service.kernel.kind import LocalRun, Pages
from service.solving import SolveService
from solvers.experiments.checkpoint import Checkpoint


@dataclass
class Chains:
    """One experiment's run: its payload, this submission's id (its chains' time limits count from it) and when its
    first chain started; its chains and points are in the kind's store."""

    payload: dict[str, Any]
    store: MemoryStore
    run: str = field(default_factory=lambda: uuid.uuid4().hex)
    started: float | None = None

    @property
    def key(self) -> str:
        return str(self.payload["key"])

    def series_text(self, key: str, point: int) -> str | None:
        """A point's per-draw series (read as from a store: :meth:`service.kernel.local.LocalBackend.read`)."""
        return self.store.series_text(key, point)


class LocalChains(ChainUnits):
    """The :class:`~service.kernel.kind.LocalKind` of experiments and learning curves."""

    shows_queue_position = False

    def __init__(self, solver: SolveService):
        self.solver = solver
        self.store = MemoryStore()

    def open(self, payload: dict[str, Any], state: Chains | None) -> Chains:
        # new, failed, cancelled, or finished without every draw (a time limit): what is missing runs
        self.store.reopen(payload["key"], n_points(payload))
        self.store.create(payload["key"])
        return Chains(payload, self.store)

    @staticmethod
    def reusable(state: Chains) -> bool:
        return state.store.complete(state.key)

    @staticmethod
    def plan(state: Chains) -> list[str]:
        units = []
        for p in range(n_points(state.payload)):
            if p in state.store.points_done(state.key):
                continue
            finished = state.store.chains_done(state.key, p)
            # a point whose chains all finished but which was not assembled: one unit assembles it
            units += [unit_of(p, c) for c in [c for c in range(n_chains(state.payload)) if c not in finished] or [0]]
        return units

    @staticmethod
    def stored(state: Chains, unit: str) -> int:
        """The chain's kept draws."""
        point, chain = point_chain(unit)
        done = state.store.chains_done(state.key, point).get(chain)
        if done is not None:
            return int(done["draws"])
        raw, _ = state.store.load_chain(state.key, point, chain)
        return 0 if raw is None else Checkpoint.from_bytes(raw).draws_done

    def run(self, run: LocalRun, seconds: float, memory_bytes: int | None) -> dict[str, Any]:
        state, (point, chain) = run.state, point_chain(run.unit)
        if state.started is None:
            state.started = time.time()
        out = run_chain(state.payload, point, chain, state.store, run=state.run, should_stop=run.should_stop,
                        who={"worker": threading.current_thread().name})
        assemble_point(state.payload, point, state.store, self.solver)
        return out

    @staticmethod
    def done(state: Chains, unit: str, outcome: dict[str, Any]) -> None:
        return None  # the chain's outcome is in the store already

    @staticmethod
    def assemble(state: Chains) -> str | None:
        if not finalize(state.payload, state.store, state.started):
            return "the experiment completed without every point assembled"
        return None

    def forget(self, state: Chains) -> None:
        return None

    @staticmethod
    def describe(state: Chains, status: str, detail: bool, pages: Pages) -> dict[str, Any]:
        store, key, payload = state.store, state.key, state.payload
        points, chains = n_points(payload), n_chains(payload)
        total = points * chains * int(payload["sampler"]["draws"])
        result = store.result_text(key) if status == "finished" else None
        return {
            "kind": experiment_kind(payload),
            "experiment_hash": key,
            "progress": {"done": total if result else min(total, store.progress(key, points, chains)),
                         "total": total},
            "chains": {"done": sum(len(store.chains_done(key, p)) for p in range(points)), "total": points * chains},
            "points": {"done": len(store.points_done(key)), "total": points},
            "result": None if result is None else json.loads(result),
        }

    @staticmethod
    def record(state: Chains, entry: dict[str, Any]) -> None:
        state.store.record(state.key, entry)

    @staticmethod
    def executions(state: Chains) -> list[dict[str, Any]]:
        return state.store.executions(state.key)
