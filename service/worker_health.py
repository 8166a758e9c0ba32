"""Who a worker is, and whether it is alive: unique names and the container healthcheck.

A worker's name is ``<host>.<pid>.<random>``: a restarted container keeps its hostname and often
gets the same small PID, so ``<host>.<pid>`` alone repeats, and a record left by the previous
incarnation (it was killed before it could register its death) made the new worker refuse to start.

``python -m service.worker --check`` answers "is a worker of this host alive?" by the records in
Redis, and does not take a record's word for it: the record's process must be running on this host
now, and be the very process that wrote the record (its start time, read from ``/proc``, is stored
with the record) — a record of a killed worker, even one whose PID was reused, does not count.

This module imports redis and rq only (never the engine, the theories or JAX), so that the
healthcheck, which runs every 30 s in each worker container, costs a fraction of a second.
"""

from __future__ import annotations

import os
import secrets
import socket
from datetime import UTC, datetime

import redis
from rq import Worker
from rq.serializers import JSONSerializer

#: Field of a worker's RQ record holding its process's start time (clock ticks after boot, Linux).
PROCESS_START_FIELD = "saddlelab_process_start"


def worker_name() -> str:
    return f"{socket.gethostname()}.{os.getpid()}.{secrets.token_hex(4)}"


def process_start(pid: int) -> str | None:
    """When the process ``pid`` of this host started (``/proc/<pid>/stat``, field 22), or None if none runs."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself contain spaces or parentheses.
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[19] if len(fields) > 19 and fields[0] != "Z" else None


def _alive_here(conn: redis.Redis, worker: Worker) -> bool:
    if worker.hostname != socket.gethostname() or not worker.pid:
        return False
    recorded = conn.hget(worker.key, PROCESS_START_FIELD)
    if recorded is None or not os.path.isdir("/proc"):
        # A record without the field (another worker program) or a system without /proc: the PID alone.
        try:
            os.kill(worker.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's process: it exists
            pass
        return True
    return process_start(worker.pid) == recorded.decode()


def check(url: str, max_silence: float) -> int:
    """Exit status of the healthcheck: 0 if a worker process of this host is registered, running, and sent a
    heartbeat within ``max_silence`` seconds; 1 otherwise."""
    conn = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    now = datetime.now(UTC)
    try:
        workers = Worker.all(connection=conn, serializer=JSONSerializer)
        for w in workers:
            if w.last_heartbeat is None:
                continue
            beat = w.last_heartbeat if w.last_heartbeat.tzinfo else w.last_heartbeat.replace(tzinfo=UTC)
            if (now - beat).total_seconds() <= max_silence and _alive_here(conn, w):
                return 0
    except redis.exceptions.RedisError:
        return 1
    return 1
