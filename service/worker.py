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
  must be longer than one sweep point.
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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import redis
from rq import Queue, Worker
from rq.serializers import JSONSerializer

from service.jobs import rq_backend, task
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
        super().main_work_horse(job, queue)


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
    worker.work(burst=args.burst, logging_level="INFO")
    return 0


if __name__ == "__main__":
    sys.exit(main())
