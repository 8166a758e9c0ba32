"""A stop request (SIGTERM) that RQ's horse monitor interrupts.

While a line runs, the worker waits for its work horse under an alarm: every heartbeat a SIGALRM handler raises
RQ's monitor timeout, the worker sends its heartbeat and waits again. A SIGTERM handled just before such an
alarm was cut short by it: the horse was never told to hand its line back and the request was forgotten, so the
worker computed the whole line before it stopped (a stop that should take one point took the rest of the sweep).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from unittest import mock

import pytest
from rq import Worker
from rq.serializers import JSONSerializer
from rq.timeouts import HorseMonitorTimeoutException, UnixSignalDeathPenalty
from rq.worker import WorkerStatus

from service.worker import SaddleLabWorker
from tests.redis_server import RedisServer

pytestmark = pytest.mark.redis


@pytest.fixture()
def horse() -> Iterator[subprocess.Popen]:
    """A stand-in work horse: SIGUSR1 (the hand-back request) ends it, so its exit status shows whether it came."""
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


def _busy_worker(server: RedisServer, horse_pid: int) -> SaddleLabWorker:
    w = SaddleLabWorker(["saddlelab"], connection=server.client(), name="stopping", serializer=JSONSerializer)
    w.register_birth()
    w.set_state(WorkerStatus.BUSY)
    w._horse_pid = horse_pid
    return w


def _alarm_now(*_: object) -> None:
    """RQ's log line of a warm stop, followed at once by the monitor's alarm."""
    os.kill(os.getpid(), signal.SIGALRM)


def test_an_alarm_during_the_stop_request_neither_loses_it_nor_is_lost(fresh_redis: RedisServer, horse) -> None:
    worker = _busy_worker(fresh_redis, horse.pid)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        with mock.patch.object(Worker, "handle_warm_shutdown_request", _alarm_now), \
                pytest.raises(HorseMonitorTimeoutException), \
                UnixSignalDeathPenalty(60, HorseMonitorTimeoutException):
            worker.request_stop(signal.SIGTERM, None)
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
    # The request is complete: the horse was told, the worker stops after it...
    assert horse.wait(10) == -signal.SIGUSR1
    assert worker.stopping and worker._stop_requested
    # ...and the alarm still reached the monitor afterwards (it sends the heartbeat, then waits again).
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL  # the death penalty put its default back


def test_a_stop_request_without_an_alarm_leaves_the_alarm_alone(fresh_redis: RedisServer, horse) -> None:
    worker = _busy_worker(fresh_redis, horse.pid)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        penalty = UnixSignalDeathPenalty(60, HorseMonitorTimeoutException)
        with penalty:
            worker.request_stop(signal.SIGTERM, None)
            assert signal.getsignal(signal.SIGALRM) == penalty.handle_death_penalty
            assert signal.alarm(60) > 0  # still armed
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
    assert horse.wait(10) == -signal.SIGUSR1
    assert worker.stopping and worker._stop_requested
