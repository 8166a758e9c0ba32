"""Run an experiment's chains block by block, assemble each point beside the theory, and the result.

Shared by every backend. The unit of work is one chain of one point (a parameter value of a learning curve,
or the experiment itself): :func:`run_chain` builds the point's network (``Theory.experiment``), reads what
the chain stored before, runs (or finishes) the warmup in chunks, then blocks of draws, storing the checkpoint
and the draws after each call (:mod:`service.experiments.store`), until the draws are done or the chain's time
limit is reached (each call sized by the chain's clock to end before it, and abandoned past it plus a grace:
:mod:`.chain_watch`). Chain c samples with
:func:`~solvers.experiments.chains.chain_options` (its own seed), so what it draws does not depend on the
worker, on the other chains, or on interruptions. The execution that completes a point's last chain joins
the chains, summarises them, solves the same spec through the cached solve path and compares
(:func:`assemble_point`); the one that assembles the last point stores the result (:func:`finalize`).
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, TypeAdapter

from service.describe import result_quantities
from service.experiments.chain_watch import ChainOverran, watched
from service.experiments.store import ExperimentStore
from service.kernel.stops import Cancelled
from service.keys import spec_hash
from service.provenance import SourceWatch, check_source, provenance, seeds_in
from service.schemas import ModelSpec
from service.serialize import comparison_json, draws_series_json, experiment_point_json
from service.settings import get_settings
from service.solving import SolveService
from solvers.core.options import SolverOptions
from solvers.experiments.chains import chain_options, chain_seed, join_chains, time_spent
from solvers.experiments.checkpoint import Checkpoint
from solvers.experiments.draws import Draws
from solvers.experiments.options import SamplerOptions
from solvers.experiments.results import Status
from solvers.experiments.target import Target
from solvers.theories import get as get_theory

_SPEC = TypeAdapter(ModelSpec)
#: Networks kept per process (a point's chains on one executor share one, and its compiled samplers).
HELD_TARGETS = 8
#: Seconds past a chain's time limit after which a sampling call still running is abandoned (a payload without
#: ``time_grace``, written before it travelled with the job).
DEFAULT_TIME_GRACE = 5.0
#: Worst first: the status of a learning curve is its worst point's.
_SEVERITY = [Status.NUMERICAL_ERROR, Status.TIME_LIMIT, Status.NOT_CONVERGED, Status.CONVERGED]


def dumps(obj: Any) -> str:
    return json.dumps(obj, allow_nan=False, separators=(",", ":"))


def use_precision(precision: str) -> None:
    """JAX's floating point for this process (x64 is a global switch, set before any network is built), and its
    persistent compilation cache (``SADDLELAB_JAX_CACHE_DIR``), so that a chain's sampler compiles once per
    machine rather than once per work horse."""
    import jax

    wanted = precision == "float64"
    if bool(jax.config.jax_enable_x64) != wanted:
        jax.config.update("jax_enable_x64", wanted)
    cache = get_settings().jax_cache_dir
    if cache and jax.config.jax_compilation_cache_dir != cache:
        jax.config.update("jax_compilation_cache_dir", cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def n_points(payload: dict[str, Any]) -> int:
    return 1 if payload["values"] is None else len(payload["values"])


def n_chains(payload: dict[str, Any]) -> int:
    return int(payload["sampler"]["chains"])


def point_value(payload: dict[str, Any], point: int) -> float | None:
    return None if payload["values"] is None else float(payload["values"][point])


def point_spec(payload: dict[str, Any], point: int) -> BaseModel:
    """The validated spec of one point: the payload's model with the parameter at the point's value."""
    body = dict(payload["model"])
    value = point_value(payload, point)
    if value is not None:
        body[payload["parameter"]] = value
    return _SPEC.validate_python(body, strict=False)


def sampler_options(payload: dict[str, Any]) -> SamplerOptions:
    return SamplerOptions.model_validate(payload["sampler"])


def _sizes(payload: dict[str, Any], spec: BaseModel) -> BaseModel:
    theory = get_theory(payload["theory"])
    return theory.experiment_sizes_for(spec).model_validate(payload["sizes"])


_targets: OrderedDict[str, Target] = OrderedDict()
_targets_lock = threading.Lock()
_building: dict[str, threading.Lock] = {}


def target_for(payload: dict[str, Any], point: int) -> Target:
    """The point's network, built once per process; its ``cache_key`` lets rebuilt copies share compiled code."""
    spec = point_spec(payload, point)
    key = spec_hash(spec, SolverOptions(), kind="network", sizes=payload["sizes"], seed=payload["network_seed"],
                    precision=payload["precision"])
    with _targets_lock:
        hit = _targets.get(key)
        if hit is not None:
            _targets.move_to_end(key)
            return hit
        lock = _building.setdefault(key, threading.Lock())
    with lock:
        with _targets_lock:
            hit = _targets.get(key)
        if hit is None:
            theory = get_theory(payload["theory"])
            hit = replace(theory.experiment(spec, _sizes(payload, spec), payload["network_seed"]), cache_key=key)
            with _targets_lock:
                _targets[key] = hit
                while len(_targets) > HELD_TARGETS:
                    _targets.popitem(last=False)
                _building.pop(key, None)
    return hit


def _stored(store: ExperimentStore, job_id: str, point: int, chain: int) -> tuple[Checkpoint | None, list[Draws]]:
    raw, blocks = store.load_chain(job_id, point, chain)
    if raw is None:
        return None, []
    checkpoint = Checkpoint.from_bytes(raw)
    draws = [Draws.from_bytes(blocks[s]) for s in sorted(blocks) if s < checkpoint.draws_done]
    if sum(d.n for d in draws) != checkpoint.draws_done:
        raise ValueError(f"point {point} chain {chain}: stored blocks do not cover the checkpoint's "
                         f"{checkpoint.draws_done} draws")
    return checkpoint, draws


def run_chain(
    payload: dict[str, Any],
    point: int,
    chain: int,
    store: ExperimentStore,
    *,
    run: str = "",
    should_stop: Callable[[], bool] | None = None,
    who: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run (or finish) one chain of one point, storing every call's checkpoint and draws; returns how it went.

    The chain has ``payload["time_limit"]`` seconds of sampling (warmup included) in run ``run`` (one submission
    of the experiment: a resubmission gives its chains their time again); its clock sizes every call to end in
    time, and a call still running ``payload["time_grace"]`` seconds past the deadline is abandoned
    (:mod:`.chain_watch`). ``should_stop`` is asked before every call: True raises :class:`Cancelled` (it may raise
    an exception of its own, e.g. to hand the chain back to the queue).
    """
    job_id = payload["key"]
    check_source(payload)
    use_precision(payload["precision"])
    if chain in store.chains_done(job_id, point):
        return {"outcome": "already complete"}
    options = chain_options(sampler_options(payload), chain)
    target = target_for(payload, point)
    checkpoint, _ = _stored(store, job_id, point, chain)  # (the blocks are checked, kept where stored)
    resumed_from = None if checkpoint is None else checkpoint.draws_done
    who = {"point": point, "chain": chain, **(who or {})}
    store.record(job_id, {**who, "event": "started", "resumed_from": resumed_from})

    unchanged = SourceWatch()  # a module imported lazily, edited since start: no block stored from it

    def check() -> None:
        if should_stop is not None and should_stop():
            raise Cancelled()

    from solvers.experiments.clock import ChainClock  # JAX, loaded where chains run
    from solvers.experiments.stepping import steps

    spent = 0.0 if checkpoint is None else time_spent(checkpoint)
    limit = payload.get("time_limit")
    left = None if not limit else limit - (spent - store.run_base(job_id, point, chain, run, spent))
    clock = ChainClock(left)
    overran = False
    check()
    try:
        for step in steps(target, options, checkpoint, clock, watched(clock.deadline, _grace(payload))):
            start = 0 if checkpoint is None else checkpoint.draws_done
            checkpoint = step.checkpoint
            block = None if step.block is None else (start, step.block.to_bytes())
            unchanged()
            store.save_chain(job_id, point, chain, checkpoint.to_bytes(), checkpoint.draws_done, block,
                             checkpoint.warmup.steps + checkpoint.draws_done)
            check()
    except ChainOverran:
        overran = True
    assert checkpoint is not None  # the chains' start always runs
    time_limited = clock.stopped or overran
    outcome = {"draws": checkpoint.draws_done, "time_limited": time_limited, "seconds": time_spent(checkpoint),
               "warmup_steps": checkpoint.warmup.steps, **({"abandoned_call": True} if overran else {})}
    store.complete_chain(job_id, point, chain, outcome)
    store.record(job_id, {**who, "event": "completed", "resumed_from": resumed_from, **outcome})
    return {"outcome": "completed", "resumed_from": resumed_from, **outcome}


def _grace(payload: dict[str, Any]) -> float:
    return float(payload.get("time_grace", DEFAULT_TIME_GRACE))


def assemble_point(payload: dict[str, Any], point: int, store: ExperimentStore, solver: SolveService) -> bool:
    """Join the point's chains, summarise them beside the theory's solve, store the point; False if chains are
    still running. (Running it twice stores the point once.)"""
    job_id = payload["key"]
    chains = n_chains(payload)
    done = store.chains_done(job_id, point)
    if len(done) < chains:
        return False
    if point in store.points_done(job_id):
        return True
    stored = [_stored(store, job_id, point, c) for c in range(chains)]
    if any(cp is None for cp, _ in stored):
        return point in store.points_done(job_id)  # assembled meanwhile by another execution
    from solvers.experiments import summarize
    from solvers.experiments.blocks import no_draws

    use_precision(payload["precision"])
    target = target_for(payload, point)
    options = sampler_options(payload)
    # a chain stopped in its warmup has no draws: an empty record of its estimators stands for them
    blocks = [b or [no_draws(target, chain_options(options, c))] for c, (_, b) in enumerate(stored)]
    checkpoint, draws = join_chains([cp for cp, _ in stored], blocks)  # type: ignore[misc]
    stopped = any(o["time_limited"] for o in done.values())
    result = summarize(target, options, checkpoint, draws, time_limited=stopped)
    spec = point_spec(payload, point)
    theory = get_theory(payload["theory"])
    solve_body, catalogue = solver.catalogue(spec, SolverOptions.model_validate(payload["solver"]))
    sizes = _sizes(payload, spec)
    predictions = {}
    for b in catalogue.branches:
        try:
            predictions[b.name] = theory.experiment_predictions(spec, catalogue, sizes, b.name)
        except KeyError:  # a branch without a report (a failed solve) predicts nothing
            continue
    value = point_value(payload, point)
    body = experiment_point_json(value, result, target.info, solve_body, comparison_json(predictions, result.estimates))
    body["complete"] = not stopped  # every requested draw of every chain; else a resubmission resumes the chains
    series = draws_series_json(point, value, draws, payload["series"]["draws"], payload["series"]["components"])
    store.put_point(job_id, point, dumps(body), dumps(series), complete=not stopped)
    return True


def experiment_provenance(payload: dict[str, Any]) -> dict[str, Any]:
    """Provenance of an experiment: every seed — the spec's, the network's, the sampler's and each chain's."""
    sampler = payload["sampler"]
    seeds = {
        **seeds_in(payload["model"], "model"),
        "network_seed": payload["network_seed"],
        "sampler.seed": sampler["seed"],
        "sampler.chain_seeds": [chain_seed(int(sampler["seed"]), c) for c in range(n_chains(payload))],
    }
    return provenance(payload["key"], seeds)


def _worst(statuses: list[str]) -> str:
    return next((s.value for s in _SEVERITY if s.value in statuses), Status.CONVERGED.value)


def finalize(payload: dict[str, Any], store: ExperimentStore, started: float | None = None) -> bool:
    """Assemble and store the result when every point is stored (and the job is still active)."""
    job_id = payload["key"]
    n = n_points(payload)
    if len(store.points_done(job_id)) < n:
        return False
    texts = [store.point_text(job_id, p) for p in range(n)]
    if any(t is None for t in texts):
        return False
    points = [json.loads(t) for t in texts]  # type: ignore[arg-type]
    summary = {
        "theory_name": payload["theory"],
        "kind": "experiment" if payload["values"] is None else "learning_curve",
        "experiment_hash": job_id,
        "parameter": payload["parameter"],
        "values": payload["values"],
        "converged": all(p["converged"] for p in points),
        "complete": all(p.get("complete", True) for p in points),
        "status": _worst([p["status"] for p in points]),
        "gradient_evaluations": sum(p["gradient_evaluations"] for p in points),
        "seconds": sum(p["seconds"] for p in points),
        "wall_seconds": None if started is None else time.time() - started,
        "device": ",".join(dict.fromkeys(d for p in points for d in p["device"].split(","))),
        "quantities": result_quantities(payload["theory"], points,
                                        parameters=[payload["parameter"]] if payload["parameter"] else [],
                                        model=payload["model"]),
        "provenance": experiment_provenance(payload),
    }
    if payload["values"] is None:
        result = dumps({**points[0], **summary})
    else:  # splice the stored points, do not re-serialise them
        result = dumps(summary)[:-1] + ',"points":[' + ",".join(texts) + "]}"  # type: ignore[arg-type]
    return store.finish(job_id, result, complete=summary["complete"])
