"""Waiting for a job: ?wait= holds the status until the job ends, the client waits with it (and still polls a server
that answers at once), and a line's process sends its points in batches, none lost."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

import clients.client as client_module
from clients import Client
from service.jobs import local_kind
from service.jobs.local_kind import LocalLines
from service.kernel import waiting
from service.kernel.local import LocalBackend
from service.schemas import SweepRequest
from service.sweep_plan import plan
from tests.service.conftest import POTENTIAL, settings

SWEEP = {"model": POTENTIAL, "parameter": "u", "values": {"start": 20, "stop": 40, "num": 9}, "method": "grid"}


def test_a_status_request_with_wait_answers_when_the_job_has_ended(client: TestClient) -> None:
    job_id = client.post("/v1/sweeps", json=SWEEP).json()["job_id"]
    body = client.get(f"/v1/jobs/{job_id}", params={"wait": 30}).json()
    # one request, answered at the end (a line takes a child process and nine solves: never done by submission)
    assert body["status"] == "finished" and len(body["result"]["points"]) == 9
    assert client.get(f"/v1/jobs/{job_id}", params={"wait": 31}).status_code == 422


def _fake_clock(monkeypatch: pytest.MonkeyPatch) -> tuple[list[float], list[float]]:
    now, sleeps = [0.0], []
    monkeypatch.setattr(client_module.time, "monotonic", lambda: now[0])

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(client_module.time, "sleep", sleep)
    return now, sleeps


def _server(now: list[float], holds: bool, asked: list[dict[str, Any]]) -> httpx.MockTransport:
    """A job that runs for 3 s of the fake clock; ``holds``: the server honours ?wait= (else answers at once)."""

    def answer(request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        asked.append(params)
        if holds and "wait" in params:
            now[0] = min(now[0] + float(params["wait"]), max(now[0], 3.0))
        done = now[0] >= 3.0
        body = {"job_id": "j", "status": "finished" if done else "running", "progress": {"done": 0, "total": 1},
                "result": {"points": []} if done else None}
        return httpx.Response(200, json=body)

    return httpx.MockTransport(answer)


@pytest.mark.parametrize("holds", [True, False])
def test_the_client_waits_with_the_server_and_polls_one_that_answers_at_once(
    monkeypatch: pytest.MonkeyPatch, holds: bool
) -> None:
    for progress, hold in ((True, "0.5"), (False, "10.0")):
        now, sleeps = _fake_clock(monkeypatch)
        asked: list[dict[str, Any]] = []
        with Client("http://lab", transport=_server(now, holds, asked), poll_interval=0.5) as lab:
            monkeypatch.setattr(client_module, "_ProgressBar", lambda *a: type("Bar", (), {
                "update": lambda self, s: None, "close": lambda self: None})())
            assert lab.wait("j", progress=progress)["points"] == []
        assert all(params.get("wait") == hold for params in asked)
        if holds:  # one request per half second with a progress bar, else one: no sleeping, the end seen at once
            assert len(asked) == (6 if progress else 1) and sum(sleeps) == 0.0 and now[0] == 3.0
        else:  # the old pace: a tenth of the time waited, at least 20 ms
            assert len(asked) > 10 and sum(sleeps) >= 3.0 and min(sleeps) == pytest.approx(0.02)


def test_a_lines_process_sends_its_points_in_batches_and_loses_none(monkeypatch: pytest.MonkeyPatch) -> None:
    payload = plan(SweepRequest.model_validate(SWEEP), settings())
    for every, most in ((1e9, 1), (0.0, 9)):  # one batch at the end; one message per point
        monkeypatch.setattr(local_kind, "SEND_EVERY", every)
        sent: list[list[tuple[int, str]]] = []
        local_kind.line_in_child(sent.append, payload, 0, {})
        assert len(sent) == most and all(isinstance(batch, list) for batch in sent)
        assert sorted(i for batch in sent for i, _ in batch) == list(range(9))


def test_a_held_request_wakes_when_told_the_job_ended_right_after_its_look(monkeypatch: pytest.MonkeyPatch) -> None:
    """The job ends just after a look has read "running" (the bad moment): the wake-up set then is not lost, and the
    request returns without waiting for its next scheduled look (here 60 s away)."""
    monkeypatch.setattr(waiting, "STEP", (60.0, 60.0))
    looks: list[bool] = []

    async def run() -> float:
        woken = asyncio.Event()

        async def ended() -> bool:
            looks.append(len(looks) > 0)
            if len(looks) == 1:
                woken.set()  # the end, announced after this look read the job as running
            return looks[-1]

        t0 = time.monotonic()
        await waiting.until_ended(ended, 120.0, woken)
        return time.monotonic() - t0

    assert asyncio.run(run()) < 30.0
    assert looks == [False, True]


def test_the_embedded_executor_announces_every_end() -> None:
    embedded = settings(solve_processes=0)
    jobs = LocalBackend(LocalLines(embedded), workers=1, settings=embedded)
    calls: list[int] = []
    stop = jobs.on_end(lambda: calls.append(1))
    try:
        job_id, _ = jobs.submit(plan(SweepRequest.model_validate(SWEEP), jobs.settings))
        for _ in range(600):
            if jobs.ended(job_id):
                break
            time.sleep(0.05)
        assert jobs.status(job_id)["status"] == "finished" and calls  # type: ignore[index]
        stop()
        n = len(calls)
        other, _ = jobs.submit(plan(SweepRequest.model_validate({**SWEEP, "values": [21.0]}), jobs.settings))
        jobs.cancel(other)
        assert len(calls) == n  # stopped: no longer called
    finally:
        jobs.shutdown()
