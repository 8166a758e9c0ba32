"""Worker names and the container healthcheck (``python -m service.worker --check``) against real processes.

Regressions: names were ``<host>.<pid>``, which repeat when a container restarts (a stale record then kept the
new worker from starting); the healthcheck trusted any recent record of this host, so it passed for a killed
worker; and it imported every theory and JAX (seconds of CPU, against a 10 s timeout, every 30 s).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys

import pytest
from rq import Worker
from rq.serializers import JSONSerializer

from service.worker import SaddleLabWorker, WorkerSettings
from service.worker_health import PROCESS_START_FIELD, check, process_start, worker_name
from tests.integration.conftest import FAST_WORKER_ENV, ROOT
from tests.redis_server import RedisServer, free_port

pytestmark = pytest.mark.redis

HOST = socket.gethostname()


def run_check(url: str) -> subprocess.CompletedProcess:
    """The healthcheck as compose runs it, reporting which heavy modules it imported."""
    script = (
        "import json, runpy, sys\n"
        f"sys.argv = ['service.worker', '--check', '--url', {url!r}]\n"
        "try:\n"
        "    runpy.run_module('service.worker', run_name='__main__', alter_sys=True)\n"
        "    code = 0\n"
        "except SystemExit as e:\n"
        "    code = e.code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'solvers', 'numpy', 'scipy')"
        " or m.startswith(('service.jobs', 'service.experiments')))\n"
        "print(json.dumps({'code': code, 'heavy': heavy}))\n"
    )
    env = {**os.environ, **FAST_WORKER_ENV, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)


def checked(url: str) -> int:
    out = run_check(url)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["heavy"] == [], f"the healthcheck imported {report['heavy'][:10]}"
    return report["code"]


def test_names_differ_between_two_starts_of_the_same_process() -> None:
    # A restarted container has the same hostname and often the same PID: the name must still differ.
    first, second = worker_name(), worker_name()
    assert first != second
    for name in (first, second):
        assert re.fullmatch(rf"{re.escape(HOST)}\.{os.getpid()}\.[0-9a-f]{{8}}", name), name


def test_the_healthcheck_is_light_and_follows_a_worker_from_start_to_kill(fresh_redis: RedisServer,
                                                                          start_worker) -> None:
    url = fresh_redis.url
    assert checked(url) == 1  # no worker yet
    worker = start_worker(None)  # named by itself, as in a container
    assert re.fullmatch(rf"{re.escape(HOST)}\.{worker.pid}\.[0-9a-f]{{8}}", worker.name), worker.name
    assert checked(url) == 0
    worker.signal(signal.SIGKILL)
    worker.proc.wait(10)
    # The killed worker's record is still there, with a recent heartbeat: it must not count.
    records = Worker.all(connection=fresh_redis.client(), serializer=JSONSerializer)
    assert [w.name for w in records] == [worker.name]
    assert checked(url) == 1


def _forge(redis_server: RedisServer, name: str, pid: int, started: str | None) -> None:
    """A worker record as a worker of ``pid`` on this host would write it."""
    w = SaddleLabWorker(["saddlelab"], connection=redis_server.client(), name=name, serializer=JSONSerializer)
    w.pid = pid
    w.register_birth()
    if started is None:
        w.connection.hdel(w.key, PROCESS_START_FIELD)
    else:
        w.connection.hset(w.key, PROCESS_START_FIELD, started)


def test_a_record_is_alive_only_while_its_own_process_runs(fresh_redis: RedisServer) -> None:
    url, me = fresh_redis.url, os.getpid()
    silence = WorkerSettings().max_silence
    mine = process_start(me)
    assert mine is not None and mine.isdigit()
    # Written by this very process: alive.
    _forge(fresh_redis, f"{HOST}.{me}.aaaaaaaa", me, mine)
    assert check(url, silence) == 0
    fresh_redis.client().flushall()
    # Its PID now belongs to another process (a restarted container reuses small PIDs): dead.
    _forge(fresh_redis, f"{HOST}.{me}.bbbbbbbb", me, str(int(mine) - 1))
    assert check(url, silence) == 1
    fresh_redis.client().flushall()
    # A PID that runs nothing: dead, with or without the start time.
    gone = subprocess.Popen(["true"])
    gone.wait()
    for started in ("12345", None):
        fresh_redis.client().flushall()
        _forge(fresh_redis, f"{HOST}.{gone.pid}.cccccccc", gone.pid, started)
        assert check(url, silence) == 1


def test_the_healthcheck_fails_when_redis_does_not_answer() -> None:
    assert checked(f"redis://127.0.0.1:{free_port()}/0") == 1
