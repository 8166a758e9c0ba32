"""The caches that outlive a request: bounded in bytes, keyed by content, consistent under threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from solvers.theories.kernel_renormalization import THEORY, datasets
from solvers.theories.kernel_renormalization.lru import BytesLRU
from solvers.theories.kernel_renormalization.spec import KernelRenormalizationSpec
from tests.payloads import solve_json
from tests.theories.test_kernel_renormalization_common import OPTIONS


def teacher(**fields: Any):
    data = {"kind": "teacher", "P": 40, "P_test": 30, "N0": 20, "seed": 0, **fields}
    return KernelRenormalizationSpec.model_validate(
        {"theory": "kernel_renormalization", "N1": 20, "T": 0.1, "data": data}
    ).data


def teacher_bytes(P: int, P_test: int, N0: int) -> int:
    return 8 * ((P + P_test) * N0 + P + P_test)


@pytest.fixture()
def small_memo(monkeypatch: pytest.MonkeyPatch) -> BytesLRU:
    """A data memo of 40 kB (the default is 256 MiB), so that a few small datasets overflow it."""
    memo: BytesLRU = BytesLRU(40_000, datasets.DATA_MEMO_ENTRIES, lambda ds: ds.nbytes)
    monkeypatch.setattr(datasets, "_MEMO", memo)
    return memo


def test_bytes_lru_evicts_the_least_recent_and_keeps_nothing_oversized() -> None:
    lru: BytesLRU[np.ndarray] = BytesLRU(100, 10, lambda a: a.nbytes)
    a, b, c = np.zeros(5), np.zeros(5), np.zeros(5)  # 40 bytes each
    lru.put("a", a)
    lru.put("b", b)
    assert lru.get("a") is a  # a is now the most recent
    lru.put("c", c)
    assert lru.get("b") is None and lru.get("a") is a and lru.get("c") is c
    assert lru.nbytes == 80
    lru.put("big", np.zeros(13))  # 104 bytes > the whole budget: not kept, nothing else dropped
    assert "big" not in lru and lru.nbytes == 80 and len(lru) == 2
    lru.put("a", np.zeros(1))  # replacing an entry re-weighs it
    assert lru.nbytes == 48
    few: BytesLRU[np.ndarray] = BytesLRU(10**6, 2, lambda a: a.nbytes)
    for k in range(5):
        few.put(k, np.zeros(1))
    assert len(few) == 2 and few.get(4) is not None and few.get(2) is None


def test_the_data_memo_stays_within_its_byte_budget(small_memo: BytesLRU) -> None:
    size = teacher_bytes(40, 30, 20)  # 11 760 bytes: three fit in 40 kB, a fourth does not
    for seed in range(7):
        datasets.materialize(teacher(seed=seed))
        assert small_memo.nbytes <= small_memo.max_bytes
        assert small_memo.nbytes == size * len(small_memo)
    assert len(small_memo) == 3
    # the most recent three are the ones kept, and a kept one is served from the memo
    again = teacher(seed=6)
    assert datasets.materialize(again) is datasets.materialize(teacher(seed=6))
    assert datasets.data_key(teacher(seed=0)) not in small_memo


def test_a_dataset_larger_than_the_budget_is_built_but_not_kept(small_memo: BytesLRU) -> None:
    kept = datasets.materialize(teacher(seed=1))
    big = datasets.materialize(teacher(P=100, P_test=100, N0=30, seed=1))  # 49.6 kB > 40 kB
    assert big.X.shape == (100, 30)
    assert datasets.data_key(teacher(P=100, P_test=100, N0=30, seed=1)) not in small_memo
    assert datasets.materialize(teacher(seed=1)) is kept  # nothing was evicted for it


def test_different_data_specs_never_share_an_entry(small_memo: BytesLRU) -> None:
    variants = [teacher(), teacher(seed=1), teacher(P=41), teacher(P_test=31), teacher(N0=21),
                teacher(teacher="linear"), teacher(teacher="erf_single_index")]
    keys = [datasets.data_key(v) for v in variants]
    assert len(set(keys)) == len(keys)
    arrays = [datasets.materialize(v) for v in variants]
    assert len({a.digest for a in arrays}) == len(arrays)
    for v, a in zip(variants, arrays, strict=True):
        assert datasets.materialize(v).digest == a.digest
    # equal content in a different object is the same entry (the key is the content, not the object)
    assert datasets.materialize(teacher()) is datasets.materialize(teacher())


def test_the_memo_is_consistent_under_threads(small_memo: BytesLRU) -> None:
    specs = [teacher(seed=s % 5) for s in range(40)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        out = list(pool.map(datasets.materialize, specs))
    for spec, ds in zip(specs, out, strict=True):
        assert ds.digest == datasets.teacher_dataset(spec).digest
    assert small_memo.nbytes == teacher_bytes(40, 30, 20) * len(small_memo) <= small_memo.max_bytes


def test_solves_of_distinct_generated_data_leave_the_memo_bounded(small_memo: BytesLRU) -> None:
    """The regression: sequential solves on new seeds must not accumulate their data."""
    for seed in range(7):
        body = {"theory": "kernel_renormalization", "N1": 20, "T": 0.1,
                "data": {"kind": "teacher", "P": 20, "P_test": 200, "N0": 20, "seed": seed}}
        assert solve_json(THEORY, KernelRenormalizationSpec.model_validate(body), OPTIONS)["converged"]
        assert small_memo.nbytes <= small_memo.max_bytes
