"""Sequential solves of distinct generated data sets leave the API's memory bounded.

Regression: 7 sequential kernel_renormalization solves on teacher data (P = 100, P_test = 10000, N0 = 10000,
seeds 0–6) took the server from 119 MB to 5.7 GB, never freed: the data memo (16 entries keyed by ``id(spec)``)
kept every request's arrays. The memo is now bounded in bytes and keyed by the data's content; and a cold solve
runs in its own process, whose memory all goes when it ends.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from solvers.theories.kernel_renormalization import datasets
from solvers.theories.kernel_renormalization.lru import BytesLRU
from tests.service.conftest import settings

MiB = 2**20
#: 4 020 x 1 200 inputs: 38.6 MB per data set, above malloc's largest mmap threshold (32 MiB), so that a freed
#: data set really leaves the process and the resident size measures what is kept.
P, P_TEST, N0 = 20, 4000, 1200
BUDGET = 50 * MiB  # one data set fits, two do not


def spec(seed: int) -> dict:
    return {"theory": "kernel_renormalization", "N1": 50, "T": 0.1,
            "data": {"kind": "teacher", "P": P, "P_test": P_TEST, "N0": N0, "seed": seed}}


def resident() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def held(memo: BytesLRU) -> int:
    """Bytes of the arrays the memo holds, counted from the arrays themselves (not from its own tally)."""
    return sum(ds.X.nbytes + ds.y.nbytes + ds.X_test.nbytes + ds.y_test.nbytes for ds, _ in memo._data.values())


def _solve_seven_in_this_process() -> tuple[int, int, int]:
    """(growth of the resident size, most bytes the memo held, entries left) over seven solves on new data."""
    memo: BytesLRU = BytesLRU(BUDGET, datasets.DATA_MEMO_ENTRIES, lambda ds: ds.nbytes)
    datasets._MEMO = memo
    most = 0
    with TestClient(create_app(settings(solve_processes=0))) as c:  # in this process, where the memo lives
        c.post("/v1/solve", json={"model": spec(100)})  # warm the libraries up
        base = resident()
        for seed in range(7):
            r = c.post("/v1/solve", json={"model": spec(seed)})
            assert r.status_code == 200 and r.json()["converged"], r.text
            most = max(most, held(memo))
        growth = resident() - base
    return growth, most, len(memo)


@pytest.mark.slow
def test_solves_in_the_api_process_keep_the_data_memo_within_its_byte_budget() -> None:
    # In a fresh process: the resident size of the test runner moves with whatever else it has run.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        growth, most, entries = pool.submit(_solve_seven_in_this_process).result(timeout=600)
    assert most <= BUDGET and entries == 1
    # Seven data sets of 38.6 MB went through; at most the budget's worth (and transient buffers) stays.
    assert growth < BUDGET + 40 * MiB, growth / MiB


@pytest.mark.slow
def test_solves_in_their_own_processes_leave_nothing_in_the_api_process() -> None:
    with TestClient(create_app(settings())) as c:
        c.post("/v1/solve", json={"model": spec(100)})
        base = resident()
        for seed in range(7):
            assert c.post("/v1/solve", json={"model": spec(seed)}).json()["converged"]
        growth = resident() - base
    assert growth < 20 * MiB, growth / MiB
