"""The embedded executor of the job kernel with a kind of its own (units that count, in threads): what the kernel
does is the same whatever the kind — one computation for identical submissions, the job of each key its own,
cancellation only when the last key withdraws, a unit past the job timeout failing its computation, a unit that
fails its computation from its own thread while statuses are read."""

from __future__ import annotations

import threading
import time
from typing import Any

from service.kernel.kind import LocalRun, Pages
from service.kernel.local import LocalBackend
from service.kernel.stops import Cancelled
from service.settings import Settings


class Counting:
    """Units "0" .. "n-1", each counting to ``steps`` (a step every ``pause`` s); ``fail_at``: the step at which
    unit 0 fails its computation."""

    shows_queue_position = False

    def __init__(self, steps: int, pause: float = 0.0, fail_at: int | None = None):
        self.steps, self.pause, self.fail_at = steps, pause, fail_at

    @staticmethod
    def label(unit: str) -> str:
        return f"unit {unit}"

    @staticmethod
    def where(unit: str) -> dict[str, Any]:
        return {"unit": unit}

    @staticmethod
    def open(payload: dict[str, Any], state: dict[str, Any] | None) -> dict[str, Any]:
        return state or {"payload": payload, "counts": dict.fromkeys(map(str, range(payload["units"])), 0),
                         "done": set(), "result": None, "log": []}

    @staticmethod
    def reusable(state: dict[str, Any]) -> bool:
        return state["result"] is not None

    @staticmethod
    def plan(state: dict[str, Any]) -> list[str]:
        return [u for u in state["counts"] if u not in state["done"]]

    @staticmethod
    def stored(state: dict[str, Any], unit: str) -> int:
        return int(state["counts"][unit])

    def run(self, run: LocalRun, seconds: float, memory_bytes: int | None) -> dict[str, Any]:
        counts = run.state["counts"]
        while counts[run.unit] < self.steps:
            if run.should_stop():
                raise Cancelled()
            if self.fail_at is not None and run.unit == "0" and counts[run.unit] == self.fail_at:
                run.fail("unit 0 failed its computation")
            counts[run.unit] += 1
            time.sleep(self.pause)
        return {"counted": counts[run.unit]}

    @staticmethod
    def done(state: dict[str, Any], unit: str, outcome: dict[str, Any]) -> None:
        state["done"].add(unit)

    @staticmethod
    def assemble(state: dict[str, Any]) -> str | None:
        state["result"] = sum(state["counts"].values())
        return None

    @staticmethod
    def forget(state: dict[str, Any]) -> None:
        return None

    @staticmethod
    def describe(state: dict[str, Any], status: str, detail: bool, pages: Pages) -> dict[str, Any]:
        return {"progress": sum(state["counts"].values()), "result": state["result"] if status == "finished" else None}

    @staticmethod
    def record(state: dict[str, Any], entry: dict[str, Any]) -> None:
        state["log"].append(entry)

    @staticmethod
    def executions(state: dict[str, Any]) -> list[dict[str, Any]]:
        return list(state["log"])


def _backend(kind: Counting, **settings: Any) -> LocalBackend:
    return LocalBackend(kind, workers=2, settings=Settings(redis_url=None, **settings))  # type: ignore[arg-type]


def _until(backend: LocalBackend, job_id: str, owner: str | None, ended: bool = True, timeout: float = 10) -> dict:
    deadline = time.monotonic() + timeout
    while backend.ended(job_id, owner) != ended:
        assert time.monotonic() < deadline, backend.status(job_id, owner)
        time.sleep(0.01)
    return backend.status(job_id, owner)  # type: ignore[return-value]


def test_identical_submissions_share_one_computation_and_each_key_sees_only_its_job() -> None:
    backend = _backend(Counting(steps=5))
    try:
        a, dedup_a = backend.submit({"key": "k", "units": 3}, owner="a")
        b, dedup_b = backend.submit({"key": "k", "units": 3}, owner="b")
        assert a != b and (dedup_a, dedup_b) == (False, True)
        assert _until(backend, a, "a")["result"] == 15 and _until(backend, b, "b")["result"] == 15
        assert backend.status(a, "b") is None and not backend.cancel(a, "b")  # another key's job: none
        assert backend.submit({"key": "k", "units": 3}, owner="a") == (a, True)
    finally:
        backend.shutdown()


def test_the_computation_stops_only_when_its_last_key_withdraws_and_resumes_from_what_it_counted() -> None:
    kind = Counting(steps=1000, pause=0.01)
    backend = _backend(kind)
    try:
        a, _ = backend.submit({"key": "k", "units": 1}, owner="a")
        b, _ = backend.submit({"key": "k", "units": 1}, owner="b")
        backend.cancel(a, "a")
        assert backend.status(a, "a")["status"] == "cancelled"  # type: ignore[index]
        assert backend.status(b, "b")["status"] in ("queued", "running")  # type: ignore[index]
        backend.cancel(b, "b")
        stopped = _until(backend, b, "b")["progress"]
        time.sleep(0.1)
        assert backend.status(b, "b")["progress"] == stopped < 1000  # type: ignore[index]
        kind.pause = 0.0
        backend.submit({"key": "k", "units": 1}, owner="b")
        assert _until(backend, b, "b", ended=False) and _until(backend, b, "b")["result"] == 1000
        assert [e["event"] for e in backend.status(b, "b", detail=True)["executions"]] == [  # type: ignore[index]
            "cancel_requested", "cancelled"]
    finally:
        backend.shutdown()


def test_a_unit_past_the_job_timeout_fails_its_computation_with_the_reason() -> None:
    backend = _backend(Counting(steps=10**6, pause=0.01), job_timeout=1)
    try:
        job, _ = backend.submit({"key": "k", "units": 1})
        body = _until(backend, job, None)
        assert body["status"] == "failed" and "unit 0 exceeded the job timeout of 1 s" in body["error"]
    finally:
        backend.shutdown()


def test_a_unit_that_fails_its_computation_from_its_thread_while_statuses_are_read() -> None:
    backend = _backend(Counting(steps=10**6, fail_at=200))
    stop = threading.Event()
    try:
        job, _ = backend.submit({"key": "k", "units": 2})

        def read() -> None:
            while not stop.is_set():
                backend.status(job, None, detail=True)

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        body = _until(backend, job, None)
        assert body["status"] == "failed" and body["error"] == "unit 0 failed its computation"
    finally:
        stop.set()
        backend.shutdown()
