"""``python -m service.worker``: an RQ worker for SaddleLab's jobs (sweep lines, experiment chains).

A thin wrapper over :class:`rq.Worker` (one forked work horse per unit of a job, a line of a sweep or a chain of
an experiment: :mod:`service.kernel.unit_task`):

- JSON serialisation (``rq.serializers.JSONSerializer``): an RQ job is ``(computation key, unit)``, its state
  lives in SaddleLab's own keys (:mod:`service.jobs.store`, :mod:`service.experiments.redis_store`);
- the job timeout is the instance's ``job_timeout``, set on every job when it is enqueued;
- a short heartbeat: RQ declares a line abandoned when its worker has not reported for
  ``heartbeat + heartbeat_grace`` seconds (RQ's default adds a fixed minute), and idle workers look
  for abandoned lines every ``maintenance`` seconds, so a worker that dies (SIGKILL, lost machine)
  has its line resumed elsewhere, from its last stored point, well within a minute;
- a work horse dies with its worker (Linux ``PR_SET_PDEATHSIG``), so a killed worker never
  leaves an orphan computing a line that another worker has taken over;
- a graceful stop (SIGTERM, ``docker compose stop``): an idle worker exits at once; a busy one
  hands its running line back to the queue after the current point, then exits (status 0 either
  way). The stop grace period of a deployment must be longer than one sweep point. If Redis is
  gone as well (``docker compose stop`` of the whole lab), a stopping worker waits for it at most
  ``stop_redis_wait`` seconds, then ends its line, which resumes from its stored points when Redis
  is back (the abandoned-line path);
- a unique name per process (``<host>.<pid>.<random>``), and its process's start time in its
  record, so that the healthcheck (:mod:`service.worker_health`) recognises a dead worker's record;
- Redis going away (a restart, a full memory) does not end the worker: while a line runs, missed
  heartbeats are logged and the line carries on (its writes wait for Redis, see
  :mod:`service.kernel.unit_task`); when RQ's loop ends on a Redis error, the worker waits for Redis with
  a bounded exponential backoff and starts its loop again, under the same name;
- a stop never waits on redis-py's pubsub thread without a bound (``SaddleLabWorker.unsubscribe``; written for
  rq 3 and redis-py 8.2+, the versions pyproject.toml allows);
- a work horse's address space is capped at its size plus ``max_solve_memory_bytes`` (RLIMIT_AS),
  the backstop behind the theories' memory estimates that the API checks at submission.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import redis
from rq import Queue, Worker
from rq.exceptions import StopRequested
from rq.serializers import JSONSerializer

from service.isolation import die_with_parent, limit_address_space
from service.redis_link import UNREACHABLE, is_transient
from service.settings import get_settings
from service.worker_health import PROCESS_START_FIELD, check, process_start, worker_name

# The engine, the theories and the job tasks (service.jobs) are imported by preload(), not here: the
# healthcheck (``--check``) runs this module too, every 30 s in every worker container, and must stay light.

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
    #: Seconds a stopping worker waits for an unreachable Redis before it ends its running line.
    stop_redis_wait: int = field(default_factory=lambda: _env_int("SADDLELAB_WORKER_STOP_REDIS_WAIT", 10))

    @property
    def worker_ttl(self) -> int:
        """RQ's worker TTL: an idle worker blocks on the queue for ``worker_ttl - 15`` s between maintenance checks."""
        return self.maintenance + 15

    @property
    def max_silence(self) -> int:
        """Seconds without a heartbeat after which a worker's record counts as dead (RQ expires it then)."""
        return self.worker_ttl + 60


#: Seconds a stopping worker waits for redis-py's pubsub thread (see SaddleLabWorker.unsubscribe).
PUBSUB_STOP_WAIT = 2.0


class SaddleLabWorker(Worker):
    heartbeat_grace = 10
    stop_redis_wait = 10.0
    #: time.monotonic() of the first stop request (SIGTERM/SIGINT), None while none came.
    stop_requested_at: float | None = None

    @property
    def stopping(self) -> bool:
        return self.stop_requested_at is not None

    def note_stop_request(self) -> None:
        if self.stop_requested_at is None:
            self.stop_requested_at = time.monotonic()

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        # While a line runs, RQ waits for the horse under an alarm whose handler raises its monitor timeout every
        # heartbeat. Raised inside this handler it would cut the request short: the horse never told, the request
        # forgotten, the whole line computed before the worker stops. The alarm is held back until the request is
        # complete, then handed on.
        held: list[FrameType | None] = []
        previous = signal.signal(signal.SIGALRM, lambda _s, f: held.append(f))
        try:
            self._request_stop(signum, frame)
        finally:
            signal.signal(signal.SIGALRM, previous)
        if held and callable(previous):
            previous(signal.SIGALRM, held[0])

    def _request_stop(self, signum: int, frame: FrameType | None) -> None:
        # RQ ends the loop of an idle worker by raising StopRequested without recording why; serve() must
        # tell a stop from a loop that ended because Redis went away (which it starts again).
        self.note_stop_request()
        try:
            super().request_stop(signum, frame)
        except (*UNREACHABLE, redis.exceptions.ResponseError) as exc:
            # A busy worker records the request in Redis first; Redis being away must not turn the warm
            # stop into a crash that kills the line mid-point.
            if not is_transient(exc):
                raise
            if not self.horse_pid:
                raise StopRequested() from exc
            self._stop_requested = True

    def unsubscribe(self) -> None:
        # RQ unsubscribes, then stops redis-py's pubsub thread with a join without a bound. The thread loops on
        # get_message(timeout=60): when it reads the unsubscribe reply before the stop reaches it, it goes back to
        # wait up to 60 s for a subscription, and the stop waited as long. Here the thread's loop is ended first
        # (it then exits as soon as it reads the reply), and it is waited for only PUBSUB_STOP_WAIT seconds: it is
        # a daemon thread, which cannot keep the process alive.
        thread, pubsub = self.pubsub_thread, self.pubsub
        if thread is None or pubsub is None:
            return
        self.log.info("Worker %s: unsubscribing from channel %s", self.name, self.pubsub_channel_name)
        thread.stop(timeout=0)
        with contextlib.suppress(*UNREACHABLE, redis.exceptions.ResponseError):
            pubsub.unsubscribe()
        thread.join(PUBSUB_STOP_WAIT)
        if thread.is_alive():
            self.log.warning("Worker %s: pubsub thread still waiting after %.0f s; leaving it", self.name,
                             PUBSUB_STOP_WAIT)
            return
        with contextlib.suppress(*UNREACHABLE, redis.exceptions.ResponseError):
            pubsub.close()

    def serialize(self) -> dict:
        # The process's start time makes the record verifiable: a record whose PID now belongs to another
        # process (or to none) is a dead worker's, whatever its last heartbeat says.
        started = process_start(self.pid)
        return {**super().serialize(), **({PROCESS_START_FIELD: started} if started else {})}

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
        from service.kernel import stops

        die_with_parent(self.pid)
        signal.signal(signal.SIGUSR1, lambda *_: stops.HANDOFF.set())
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
            waited = time.monotonic() - self.stop_requested_at if self.stop_requested_at is not None else 0.0
            if waited > self.stop_redis_wait and self.horse_pid:
                # Stopping, and the line cannot hand itself back: Redis is gone (the whole lab is being
                # stopped). The line resumes from its stored points once Redis is back (abandoned-line path).
                self.log.warning("Worker %s: stopping and Redis unreachable for %.0f s: ending the running line",
                                 self.name, waited)
                self.kill_horse()


def connect(url: str) -> redis.Redis:
    # No socket (read) timeout: the worker blocks on the queue, RQ sizes its own timeouts. A connect timeout
    # keeps a stopping worker from hanging on a Redis host that no longer answers.
    return redis.Redis.from_url(url, health_check_interval=30, socket_connect_timeout=5)


def build_worker(url: str, knobs: WorkerSettings | None = None, name: str | None = None) -> SaddleLabWorker:
    from service.kernel import rq_units

    knobs = knobs or WorkerSettings()
    conn = connect(url)
    queue = Queue(rq_units.QUEUE, connection=conn, serializer=JSONSerializer)
    worker = SaddleLabWorker(
        [queue],
        connection=conn,
        name=name or worker_name(),
        serializer=JSONSerializer,
        job_monitoring_interval=knobs.heartbeat,
        maintenance_interval=knobs.maintenance,
        worker_ttl=knobs.worker_ttl,
    )
    worker.heartbeat_grace = knobs.heartbeat_grace
    worker.stop_redis_wait = knobs.stop_redis_wait
    return worker


def preload() -> None:
    """Import the job tasks, the engine and every theory once, so each forked work horse starts warm."""
    import service.jobs.rq_kind  # noqa: F401
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
    # As in the fork server (service/warm.py): these objects live as long as the worker, and a work horse that
    # allocates enough containers would otherwise run full collections over all of them.
    gc.freeze()


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


def _stop_between_loops(worker: SaddleLabWorker) -> None:
    """Outside RQ's loop (waiting for Redis, for a horse left running) SIGTERM/SIGINT still stop the worker: a
    running line is told to hand itself back and awaited, otherwise the wait ends at once."""

    def stop(signum: int, frame: FrameType | None) -> None:
        worker.note_stop_request()
        if worker.horse_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.horse_pid, signal.SIGUSR1)
            return
        raise StopRequested()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise StopRequested()


#: Stop requests that came while the worker was still starting (see main()).
_EARLY_STOPS: list[int] = []


def _stop_before_start(signum: int, frame: FrameType | None) -> None:
    # Noted, not raised: an exception raised inside an import can be swallowed by the imported library's own
    # `except Exception` (the worker then ran on, deaf to the SIGTERM) or leave a module half imported.
    _EARLY_STOPS.append(signum)


def serve(worker: SaddleLabWorker, burst: bool = False) -> int:
    """RQ's loop, started again (same worker, same name) whenever it ends because Redis went away or filled up;
    0 once the worker was asked to stop (or, in burst mode, ran out of work).

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
            finally:
                _stop_between_loops(worker)
            if worker.stopping or (burst and crashed is None):
                _wait_for_horse(worker)
                return 0
            log.warning("worker %s: its loop ended (%s); starting it again once Redis is usable", worker.name,
                        crashed or "see the log above")
            _wait_for_horse(worker)
            if worker.stopping:
                return 0
            pause = RECONNECT_FIRST if time.monotonic() - started > 60 else min(pause * 2, RECONNECT_MAX)
            time.sleep(pause)
            wait_for_redis(worker.connection)
            # The loop registers the worker again; a record left without a death mark (Redis lost it) is cleared.
            with contextlib.suppress(*UNREACHABLE, redis.exceptions.ResponseError):
                worker.connection.delete(worker.key)
    except StopRequested:  # asked to stop outside RQ's loop, e.g. while waiting for Redis
        with contextlib.suppress(*UNREACHABLE, redis.exceptions.ResponseError):
            if worker.connection.exists(worker.key):
                worker.register_death()
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.worker", description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=None, help="Redis URL (default: $REDIS_URL)")
    parser.add_argument("--name", default=None, help="worker name (default: <host>.<pid>.<random>)")
    parser.add_argument("--burst", action="store_true", help="quit when the queue is empty")
    parser.add_argument("--check", action="store_true",
                        help="healthcheck: exit 0 if a worker process of this host is alive and registered")
    args = parser.parse_args(argv)
    url = args.url or get_settings().redis_url
    if not url:
        parser.error("no Redis: set REDIS_URL or pass --url")
    if args.check:
        return check(url, WorkerSettings().max_silence)
    # A stop requested while the theories load (seconds) ends the worker cleanly once they are loaded, before
    # it registers; RQ's loop installs its own handlers once it runs.
    signal.signal(signal.SIGTERM, _stop_before_start)
    signal.signal(signal.SIGINT, _stop_before_start)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    preload()
    if _EARLY_STOPS:
        log.info("stop requested while starting: exiting")
        return 0
    worker = build_worker(url, name=args.name)
    if _EARLY_STOPS:
        return 0
    # From here until RQ's loop takes the signals over, a stop is raised: serve() ends on it cleanly.
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    status = serve(worker, burst=args.burst)
    log.info("worker %s: stopped", worker.name)
    return status


if __name__ == "__main__":
    sys.exit(main())
