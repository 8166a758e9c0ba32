"""Validate an experiment request into a plain, hashable job payload: one limit check, then the key.

Everything that can be refused is refused here, with a 422 naming the field: a theory (or mode) without a
network, a network that cannot be sampled (``T = 0``, a discrete prior, …), sizes that do not fit the theory's
sizes model, an unknown initialisation, SGLD without minibatches, every size-like quantity — the theory's,
its network's (sampled parameters, data held, numbers per draw) and the sampler's (chains, draws, steps, work) —
above the instance's limit of that name, and the bytes the experiment would store (``experiment_stored_bytes``)
or hold in the worker that assembles a point (``max_solve_memory_bytes``: :mod:`.footprint`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from service.errors import field_error, relocate
from service.experiments.footprint import PointSizes, footprint
from service.experiments.schemas import ExperimentRequest
from service.keys import spec_hash
from service.limits import check_limits, check_sizes
from service.provenance import SOURCE_FINGERPRINT, ensure_source_unchanged
from service.schemas import Range
from service.settings import Settings
from service.sweep_plan import expand
from solvers.core.options import SolverOptions
from solvers.experiments.options import SAMPLER_SIZE_LIMITS, SamplerOptions, sampler_sizes
from solvers.theories import get as get_theory
from solvers.theories.base import ExperimentRefused, Theory

#: Default limit of the points (parameter values) of one learning curve.
POINT_LIMITS = {"experiment_points": 100}
#: Default limit of the bytes one experiment stores (:mod:`service.experiments.footprint`): a quarter of the
#: compose file's Redis, which every user's jobs and the cache share.
FOOTPRINT_LIMITS = {"experiment_stored_bytes": 512 * 2**20}
PRECISIONS = ("float32", "float64")


def _refused(exc: ExperimentRefused, parameter: str | None = None, index: int = 0) -> Exception:
    """A 422 at the refused field; at the value of a learning curve when the varied field is the one refused."""
    if parameter is not None and exc.loc == ("model", parameter):
        return field_error(["values", index], str(exc))
    return field_error(list(exc.loc), exc.reason)


def _points(req: ExperimentRequest, theory: Theory, settings: Settings) -> list[tuple[float | None, BaseModel]]:
    """(value, spec at that value) per point; one point (value None) without a learning curve."""
    model = req.model
    if req.parameter is None:
        return [(None, model)]
    allowed = theory.sweepable_for(model)
    if req.parameter not in allowed:
        raise field_error(["parameter"], f"'{req.parameter}' cannot be varied for this spec; one of {sorted(allowed)}",
                          value=req.parameter)
    limit = settings.limit("experiment_points", POINT_LIMITS["experiment_points"])
    if isinstance(req.values, Range) and req.values.num > limit:
        raise field_error(["values", "num"], f"{req.values.num} values exceed the limit experiment_points={limit:g}")
    values = expand(req.values)  # type: ignore[arg-type]
    if not values:
        raise field_error(["values"], "at least one value is needed")
    if len(values) > limit:
        raise field_error(["values"], f"{len(values)} values exceed the limit experiment_points={limit:g}")
    cls, base = type(model), model.model_dump()
    points = []
    for i, v in enumerate(values):
        try:
            at = cls.model_validate({**base, req.parameter: v}, strict=False)
        except ValidationError as exc:
            raise relocate(exc, ["values", i]) from None
        check_sizes(at, settings, prefix=("values", i))
        points.append((v, at))
    return points


def _sizes(req: ExperimentRequest, theory: Theory) -> BaseModel:
    try:
        sizes_model = theory.experiment_sizes_for(req.model)
    except ExperimentRefused as exc:
        raise _refused(exc) from None
    try:
        return sizes_model.model_validate(req.sizes or {})
    except ValidationError as exc:
        raise relocate(exc, ["sizes"]) from None


def _sampler(req: ExperimentRequest, theory: Theory) -> SamplerOptions:
    options = req.sampler or SamplerOptions()
    inits = theory.experiment_inits_for(req.model)
    if options.init not in inits:
        raise field_error(["sampler", "init"], f"unknown init {options.init!r}; this network has {list(inits)}",
                          value=options.init)
    if options.method == "sgld" and not theory.experiment_minibatch_for(req.model):
        raise field_error(["sampler", "method"], "sgld needs a minibatch likelihood, which this network has not "
                          "(its readout is integrated out over the whole data set, or it has no data set)",
                          value="sgld")
    if options.keep_positions:
        raise field_error(["sampler", "keep_positions"], "the service keeps the estimators' draws, not the "
                          "network's parameters", value=True)
    return options


def _check_footprint(options: SamplerOptions,
                     networks: list[tuple[PointSizes, dict[str, tuple[tuple[str | int, ...], float]]]],
                     precision: str, settings: Settings) -> None:
    """Bytes stored and held by the assembling worker against their limits: a 422 naming the field that drives the
    estimate — the draws, or the sampled dimension when the checkpoints dominate (a dense mass matrix)."""
    fp = footprint(options, [n for n, _ in networks], precision, settings.experiment_series_draws,
                   settings.experiment_series_components)
    worst = max(networks, key=lambda n: n[0].draw_values)
    values = worst[0].draw_values
    draws_driven = fp.stored_by_draws >= fp.stored / 2
    if draws_driven:
        loc: list[str | int] = ["sampler", "draws"]
    elif options.method in ("nuts", "hmc") and options.mass_matrix == "dense":
        loc = ["sampler", "mass_matrix"]
    else:
        loc = list(worst[1].get("experiment_parameters", (("sampler", "draws"), 0.0))[0])
    what = (f"{values:,.0f} numbers per draw (the field driving them: "
            f"{'.'.join(map(str, worst[1].get('experiment_draw_values', ((), 0))[0])) or 'the estimators'}) × "
            f"{options.chains} chains × {options.draws} draws × {len(networks)} point(s), checkpoints and results")
    limit = settings.limit("experiment_stored_bytes", FOOTPRINT_LIMITS["experiment_stored_bytes"])
    if fp.stored > limit:
        raise field_error(loc, f"this experiment would store about {fp.stored / 2**20:,.0f} MiB ({what}), above "
                          f"the limit experiment_stored_bytes={limit:g} ({limit / 2**20:,.0f} MiB) of this instance")
    cap = settings.max_solve_memory_bytes
    if cap and cap > 0 and fp.worker > cap:
        raise field_error(loc, f"assembling a point of this experiment needs about {fp.worker / 2**20:,.0f} MiB "
                          f"in the worker ({what}), above the limit max_solve_memory_bytes={cap} "
                          f"({cap / 2**20:,.0f} MiB) of this instance")


def plan(req: ExperimentRequest, settings: Settings) -> dict[str, Any]:
    """Validated payload: theory, spec, sizes, seeds, sampler and solver options, points, key, instance caps."""
    model = req.model
    theory = get_theory(model.theory)  # type: ignore[attr-defined]
    check_sizes(model, settings)
    sizes = _sizes(req, theory)
    options = _sampler(req, theory)
    points = _points(req, theory, settings)
    parameters = 0.0
    networks: list[tuple[PointSizes, dict[str, tuple[tuple[str | int, ...], float]]]] = []
    for i, (_, spec) in enumerate(points):
        try:
            declared = theory.check_experiment(spec, sizes)
        except ExperimentRefused as exc:
            raise _refused(exc, req.parameter, i) from None
        if req.parameter is not None:  # a size set by the varied field is named by its value
            declared = {k: (("values", i) if loc == ("model", req.parameter) else loc, v)
                        for k, (loc, v) in declared.items()}
        check_limits(declared, theory.experiment_size_limits, settings)
        parameters = max(parameters, declared.get("experiment_parameters", ((), 0.0))[1])
        networks.append((PointSizes(theory.experiment_estimator_sizes(spec, sizes),
                                    declared.get("experiment_parameters", ((), 0.0))[1],
                                    declared.get("experiment_data", ((), 0.0))[1]), declared))
    check_limits(sampler_sizes(options, parameters, len(points)), SAMPLER_SIZE_LIMITS, settings)
    precision = settings.experiment_precision
    if precision not in PRECISIONS:
        raise ValueError(f"SADDLELAB_EXPERIMENT_PRECISION must be one of {PRECISIONS}, not {precision!r}")
    _check_footprint(options, networks, precision, settings)
    solver = req.solver or SolverOptions()
    values = None if req.parameter is None else [v for v, _ in points]
    # The time limit is not part of the key: it bounds a run, it does not change what a complete run computes (an
    # incomplete one is never final, and a submission with more time resumes it).
    key = spec_hash(model, solver, kind="experiment", sizes=sizes.model_dump(mode="json"),
                    network_seed=req.network_seed, sampler=options.model_dump(mode="json", exclude={"time_limit"}),
                    parameter=req.parameter, values=values, precision=precision)
    cap = settings.experiment_time_limit
    limit = options.time_limit if options.time_limit is not None else cap
    ensure_source_unchanged()  # the key is made for this fingerprint: its code must still be on disk
    return {
        "key": key,
        "theory": theory.name,
        "model": model.model_dump(mode="json"),
        "sizes": sizes.model_dump(mode="json"),
        "network_seed": req.network_seed,
        "sampler": options.model_dump(mode="json"),
        "parameter": req.parameter,
        "values": values,
        "solver": solver.model_dump(mode="json"),
        "precision": precision,
        # The code the key was made for: a worker running other code refuses the job.
        "source": SOURCE_FINGERPRINT,
        # The instance's caps travel with the job to the workers; they are not part of the key.
        "time_limit": min(limit, cap) if cap else limit,
        "time_grace": settings.experiment_kill_grace,
        "solve_time_limit": settings.solve_time_limit,
        "series": {"draws": settings.experiment_series_draws, "components": settings.experiment_series_components},
    }
