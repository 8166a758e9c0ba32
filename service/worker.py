"""``python -m service.worker``: an RQ worker for SaddleLab's sweeps and phase diagrams.

A thin wrapper over :class:`rq.Worker` (one forked work horse per line of a job):

- JSON serialisation (``rq.serializers.JSONSerializer``): a job is ``(job id, line)``, its state
  lives in SaddleLab's own keys (:mod:`service.jobs.store`);
- the job timeout is the instance's ``job_timeout``, set on every job when it is enqueued;
- a short heartbeat: RQ declares a line abandoned when its worker has not reported for
  ``heartbeat + heartbeat_grace`` seconds (RQ's default adds a fixed minute), and idle workers look
  for abandoned lines every ``maintenance`` seconds, so a worker that dies (SIGKILL, lost machine)
  has its line resumed elsewhere, from its last stored point, well within a minute;
- a work horse dies with its worker (Linux ``PR_SET_PDEATHSIG``), so a killed worker never
  leaves an orphan computing a line that another worker has taken over;
- a graceful stop (SIGTERM, ``docker compose stop``): the running line is handed back to the
  queue after its current point, and the worker exits. The stop grace period of a deployment
  must be longer than one sweep point;
- Redis going away (a restart, a full memory) does not end the worker: while a line runs, missed
  heartbeats are logged and the line carries on (its writes wait for Redis, see
  :mod:`service.jobs.task`); when RQ's loop ends on a Redis error, the worker waits for Redis with
  a bounded exponential backoff and starts its loop again, under the same name;
- a work horse's address space is capped at its size plus ``max_solve_memory_bytes`` (RLIMIT_AS),
  the backstop behind the theories' memory estimates that the API checks at submission.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import redis
from rq import Queue, Worker
from rq.exceptions import StopRequested
from rq.serializers import JSONSerializer

from service.isolation import limit_address_space
from service.jobs import rq_backend, task
from service.redis_link import UNREACHABLE, is_transient
from service.settings import get_settings

log = logging.getLogger("saddlelab.worker")


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


@dataclass(frozen=True)
class WorkerSettings:
    """Liveness knobs of a worker; each has an environment variable."""

    #: Seconds between heartbeats while a line runs (RQ's job_monitoring_interval).
    heartbeat: int = field(default_factory=lambda: _env_int("SADDLELAB_WORKER_HEARTBEAT", 5))
    #: Extra seconds without a heartbeat before a running line counts as abandoned.
    heartbeat_grace: int = field(default_factory=lambda: _env_int("SADDLELAB_WORKER_HEARTBEAT_GRACE", 10))
    #: Seconds between two searches for abandoned lines by an idle worker.
    maintenance: int = field(default_factory=lambda: _env_int("SADDLELAB_WORKER_MAINTENANCE", 10))


class SaddleLabWorker(Worker):
    heartbeat_grace = 10

    def get_heartbeat_ttl(self, job: Any, working_time: float = 0.0) -> int:
        """How long the running line stays registered without a heartbeat (RQ adds 60 s here)."""
        interval = float(self.job_monitoring_interval)
        if job.timeout is not None and job.timeout > 0:
            interval = max(1.0, min(job.timeout - working_time, interval))
        return int(interval) + int(self.heartbeat_grace)

    def handle_warm_shutdown_request(self) -> None:
        super().handle_warm_shutdown_request()
        if self.horse_pid:
            self.log.info("Worker %s: handing the running line back to the queue after its current point", self.name)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.horse_pid, signal.SIGUSR1)

    def main_work_horse(self, job: Any, queue: Queue) -> None:
        _die_with_parent(self.pid)
        signal.signal(signal.SIGUSR1, lambda *_: task.HANDOFF.set())
        memory = get_settings().max_solve_memory_bytes
        if memory and memory > 0:
            limit_address_space(memory)
        super().main_work_horse(job, queue)

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        try:
            super().heartbeat(timeout, pipeline)
        except (*UNREACHABLE, redis.exceptions.ResponseError) as exc:
            if not is_transient(exc):
                raise
            self.log.warning("Worker %s: heartbeat not sent (%s)", self.name, exc)

    def maintain_heartbeats(self, job: Any, execution: Any) -> None:
        # While a line runs, Redis may restart or fill up: the horse keeps computing (its writes wait),
        # the missed beats are only logged.
        try:
            super().maintain_heartbeats(job, execution)
        except (*UNREACHABLE, redis.exceptions.ResponseError) as exc:
            if not is_transient(exc):
                raise
            self.log.warning("Worker %s: heartbeat of the running line not sent (%s)", self.name, exc)


def _die_with_parent(parent: int | None) -> None:
    """Ask Linux to SIGKILL this process when its parent (the worker) dies."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent and os.getppid() != parent:  # the worker died before the request was in place
        os._exit(1)


def worker_name() -> str:
    return f"{socket.gethostname()}.{os.getpid()}"


def connect(url: str) -> redis.Redis:
    # No socket timeout: the worker blocks on the queue, RQ sizes its own timeouts.
    return redis.Redis.from_url(url, health_check_interval=30)


def build_worker(url: str, knobs: WorkerSettings | None = None, name: str | None = None) -> SaddleLabWorker:
    knobs = knobs or WorkerSettings()
    conn = connect(url)
    queue = Queue(rq_backend.QUEUE, connection=conn, serializer=JSONSerializer)
    worker = SaddleLabWorker(
        [queue],
        connection=conn,
        name=name or worker_name(),
        serializer=JSONSerializer,
        job_monitoring_interval=knobs.heartbeat,
        maintenance_interval=knobs.maintenance,
        # RQ blocks on the queue for worker_ttl - 15 s between maintenance checks.
        worker_ttl=knobs.maintenance + 15,
    )
    worker.heartbeat_grace = knobs.heartbeat_grace
    return worker


def preload() -> None:
    """Import the engine and every theory once, so each forked work horse starts warm."""
    from solvers.theories import registry

    try:
        names = sorted(registry())
    except Exception as exc:  # a broken theory must not keep the others from running
        log.warning("could not load every theory: %s", exc)
        return
    log.info("theories loaded: %s", ", ".join(names))
    # The fingerprint is computed here, before any work horse forks; /healthz shows the API's, to compare.
    from service.provenance import SOURCE_FINGERPRINT

    log.info("solver source %s", SOURCE_FINGERPRINT)


#: Bounds of the wait between two attempts to reach Redis again after the worker's loop ended on a Redis error.
RECONNECT_FIRST, RECONNECT_MAX = 0.5, 30.0


def wait_for_redis(conn: redis.Redis, first: float = RECONNECT_FIRST, cap: float = RECONNECT_MAX) -> None:
    """Block until Redis answers a ping and accepts a write, waiting with a bounded exponential backoff."""
    delay = first
    while True:
        try:
            conn.ping()
            conn.set("saddlelab:worker-probe", "1", ex=60)
            return
        except (*UNREACHABLE, redis.exceptions.ResponseError) as exc:
            if not is_transient(exc):
                raise
            log.warning("redis not usable (%s); trying again in %.1f s", exc, delay)
        time.sleep(delay)
        delay = min(delay * 2, cap)


def _wait_for_horse(worker: SaddleLabWorker) -> None:
    """A line still computing when RQ's loop ended keeps its slot: the worker takes no new line before it ends."""
    pid = worker.horse_pid
    if pid:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        worker._horse_pid = 0


def serve(worker: SaddleLabWorker, burst: bool = False) -> int:
    """RQ's loop, started again (same worker, same name) whenever it ends because Redis went away or filled up.

    A loop that keeps ending at once is started again after a growing pause (bounded), so that a
    persistent fault is logged, not spun on.
    """
    pause = RECONNECT_FIRST
    try:
        while True:
            crashed: BaseException | None = None
            started = time.monotonic()
            try:
                worker.work(burst=burst, logging_level="INFO")
            except (*UNREACHABLE, redis.exceptions.ResponseError) as exc:  # e.g. registering while Redis is away
                if not is_transient(exc):
                    raise
                crashed = exc
            if worker._stop_requested or (burst and crashed is None):
                return 0
            log.warning("worker %s: its loop ended (%s); starting it again once Redis is usable", worker.name,
                        crashed or "see the log above")
            _wait_for_horse(worker)
            pause = RECONNECT_FIRST if time.monotonic() - started > 60 else min(pause * 2, RECONNECT_MAX)
            time.sleep(pause)
            wait_for_redis(worker.connection)
            # The loop registers the worker again; a record left without a death mark (Redis lost it) is cleared.
            with contextlib.suppress(*UNREACHABLE, redis.exceptions.ResponseError):
                worker.connection.delete(worker.key)
    except StopRequested:  # SIGTERM while waiting for Redis
        return 0


def check(url: str) -> int:
    """Container healthcheck: a worker of this host is registered and has sent a recent heartbeat."""
    conn = connect(url)
    host = socket.gethostname() + "."
    now = datetime.now(UTC)
    for w in Worker.all(connection=conn, serializer=JSONSerializer):
        if not w.name.startswith(host) or w.last_heartbeat is None:
            continue
        beat = w.last_heartbeat if w.last_heartbeat.tzinfo else w.last_heartbeat.replace(tzinfo=UTC)
        if (now - beat).total_seconds() <= w.worker_ttl + 60:
            return 0
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.worker", description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=None, help="Redis URL (default: $REDIS_URL)")
    parser.add_argument("--name", default=None, help="worker name (default: <host>.<pid>)")
    parser.add_argument("--burst", action="store_true", help="quit when the queue is empty")
    parser.add_argument("--check", action="store_true", help="healthcheck: exit 0 if a worker of this host is alive")
    args = parser.parse_args(argv)
    url = args.url or get_settings().redis_url
    if not url:
        parser.error("no Redis: set REDIS_URL or pass --url")
    if args.check:
        return check(url)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    preload()
    worker = build_worker(url, name=args.name)
    return serve(worker, burst=args.burst)


if __name__ == "__main__":
    sys.exit(main())
