"""Checkpoints: a run cut into blocks anywhere, serialised (bytes or JSON) and resumed, draws exactly — bit for bit
— what the uninterrupted run draws, for every method; repeated blocks do not recompile."""

from __future__ import annotations

import json

import numpy as np
import pytest

from solvers.experiments import Checkpoint, Draws, SamplerOptions, concatenate, run_block, warmup
from solvers.experiments.blocks import TRACES, advance_warmup
from tests.experiments.targets import (
    ADJUSTED,
    BLOCK,
    LANGEVIN,
    PRODUCT,
    REGRESSION_TARGET,
    SGLD,
    LinearRegression,
    ill_conditioned,
    product_target,
)

# the samplers' test options (compiled code shared with those tests), with fewer draws
OPTIONS = {
    **{name: (PRODUCT, {**ADJUSTED[name]}) for name in ADJUSTED},
    "langevin": (PRODUCT, LANGEVIN),
    "sgld": (REGRESSION_TARGET, SGLD),
    "mala-positions": (PRODUCT, {**ADJUSTED["mala"], "keep_positions": True}),
}
OPTIONS = {
    name: (target, SamplerOptions(**{**fields, "draws": 60, "seed": 21, "block_size": BLOCK}))
    for name, (target, fields) in OPTIONS.items()
}


def _same_checkpoint(a: Checkpoint, b: Checkpoint) -> None:
    da, db = a.to_dict(), b.to_dict()
    for d in (da, db):  # wall times differ, everything else must not
        d.pop("seconds")
        d["warmup"].pop("seconds")
    assert da == db


def _same_draws(a: Draws, b: Draws) -> None:
    assert a.start == b.start and a.n == b.n
    assert a.estimates.keys() == b.estimates.keys()
    for name in a.estimates:
        np.testing.assert_array_equal(a.estimates[name], b.estimates[name], strict=True)
    for name in ("logdensity", "acceptance", "divergences", "gradient_evaluations", "nonfinite"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), strict=True)
    if a.positions is None:
        assert b.positions is None
    else:
        np.testing.assert_array_equal(a.positions, b.positions, strict=True)


@pytest.mark.parametrize("method", list(OPTIONS))
def test_resumed_run_equals_uninterrupted_run(method):
    target, options = OPTIONS[method]
    start = warmup(target, options)
    whole_ck, whole = run_block(target, options, start, n_draws=options.draws)

    # cut after warmup, after 1 draw and after 23 draws; storage as bytes, then as JSON text
    ck = Checkpoint.from_bytes(start.to_bytes())
    pieces = []
    for n, store in ((1, "bytes"), (22, "json"), (options.draws, "bytes")):
        ck, block = run_block(target, options, ck, n_draws=n)
        pieces.append(Draws.from_bytes(block.to_bytes()))
        ck = Checkpoint.from_bytes(ck.to_bytes()) if store == "bytes" else Checkpoint.from_dict(
            json.loads(json.dumps(ck.to_dict())))
    assert [p.n for p in pieces] == [1, 22, options.draws - 23]
    _same_draws(concatenate(pieces), whole)
    _same_checkpoint(ck, whole_ck)
    assert ck.draws_done == options.draws
    assert ck.gradient_evaluations == int(whole.gradient_evaluations.sum())
    # a finished run gives empty blocks
    _, empty = run_block(target, options, ck)
    assert empty.n == 0


@pytest.mark.parametrize("method", ["nuts", "hmc", "mala", "langevin", "sgld"])
def test_a_warmup_cut_anywhere_and_resumed_equals_the_uninterrupted_one(method):
    """A long warmup runs in chunks (a chain's time limit cuts it; it is stored and resumed): cut after 1 step,
    inside the first and across later adaptation windows, through bytes and JSON, it adapts exactly as in one
    piece, and the draws after it are the same."""
    target, options = OPTIONS[method]
    whole = warmup(target, options)
    ck = None
    for n, store in ((1, "bytes"), (80, "json"), (101, "bytes"), (options.warmup, "json")):
        ck = advance_warmup(target, options, ck, n)
        assert ck.warming_up == (ck.warmup.steps < options.warmup)
        ck = Checkpoint.from_bytes(ck.to_bytes()) if store == "bytes" else Checkpoint.from_dict(
            json.loads(json.dumps(ck.to_dict())))
    assert not ck.warming_up and ck.warmup.steps == options.warmup
    _same_checkpoint(ck, whole)
    # sampling from a checkpoint still in its warmup finishes the warmup first
    part = advance_warmup(target, options, None, 37)
    _, a = run_block(target, options, part, n_draws=5)
    _, b = run_block(target, options, whole, n_draws=5)
    _same_draws(a, b)


def test_run_block_without_checkpoint_starts_with_the_warmup():
    target, options = OPTIONS["langevin"]
    ck_a, a = run_block(target, options, None, n_draws=10)
    ck_b, b = run_block(target, options, warmup(target, options), n_draws=10)
    _same_draws(a, b)
    _same_checkpoint(ck_a, ck_b)


def test_blocks_do_not_recompile():
    target, options = OPTIONS["langevin"]
    ck = warmup(target, options)
    ck, _ = run_block(target, options, ck, n_draws=5)
    before = TRACES.copy()
    for n in (1, 7, 25, 60):  # any block length, including one split into several compiled chunks
        ck = Checkpoint.from_bytes(ck.to_bytes())
        ck, _ = run_block(target, options, ck, n_draws=n)
    # another seed, and a target rebuilt with the same cache_key, reuse the compiled code too
    mean, cov = ill_conditioned()
    rebuilt = [product_target(mean, cov, LinearRegression(), key="tests.product") for _ in range(2)]
    product_options = OPTIONS["hmc"][1]
    run_block(rebuilt[0], product_options, None, n_draws=3)
    after_first = TRACES.copy()
    run_block(rebuilt[1], product_options.model_copy(update={"seed": 99}), None, n_draws=3)
    assert after_first == TRACES
    assert after_first["block"] - before["block"] <= 1 and after_first["warmup"] - before["warmup"] <= 1


def test_resume_with_other_chain_options_is_refused():
    target, options = OPTIONS["langevin"]
    ck = warmup(target, options)
    with pytest.raises(ValueError, match="other sampler options"):
        run_block(target, options.model_copy(update={"seed": 5}), ck)
    # the number of draws, the block size, the thresholds and the time limit may change
    more = options.model_copy(update={"draws": 100, "rhat_max": 1.05, "time_limit": 5.0})
    ck, block = run_block(target, more, ck, n_draws=80)
    assert block.n == 80
    assert options.model_copy(update={"block_size": 7}).chain_fingerprint() == options.chain_fingerprint()


def test_checkpoint_is_json_safe_and_exact():
    target, options = OPTIONS["langevin"]
    ck, _ = run_block(target, options, None, n_draws=4)
    text = json.dumps(ck.to_dict(), allow_nan=False)
    back = Checkpoint.from_dict(json.loads(text))
    for a, b in zip(ck.state, back.state, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert back.key.tobytes() == ck.key.tobytes() and back.key_impl == ck.key_impl
    with pytest.raises(ValueError, match="checkpoint"):
        Checkpoint.from_dict({**ck.to_dict(), "format": "something else"})
