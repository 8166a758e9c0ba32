"""In-process job executor, used when no Redis is configured.

The :class:`~service.jobs.backend.JobBackend` of the embedded default, as the RQ backend
(:mod:`service.jobs.rq_backend`): submit (deduplicated by the sweep's key,
bounded per owner), status with progress, cancel. Points are kept as they are computed, so the
status shows progress (and, on request, the points so far) before the end. Nothing survives a
restart of the process: that is what the Redis backend is for.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from service.jobs.backend import ACTIVE, JobLimitExceeded, job_kind, line_count, line_total
from service.jobs.lines import Cancelled, assemble_job, fixed_for_row, run_line
from service.secrets import InstanceSecret

log = logging.getLogger("saddlelab.jobs")


class LocalJobs:
    kind = "local"

    def __init__(self, workers: int = 2, secret: InstanceSecret | None = None):
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="saddlelab-job")
        self._jobs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def submit(self, payload: dict[str, Any], owner: str | None = None, limit: int = 0) -> tuple[str, bool]:
        """Start a job (or return the unfinished/finished one with the same key: ``deduplicated``)."""
        job_id = payload["key"]
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and job["status"] not in ("failed", "cancelled"):
                return job_id, True
            if limit and self._active(owner) >= limit:
                raise JobLimitExceeded(limit)
            rows = line_count(payload)
            self._jobs[job_id] = {
                "job_id": job_id,
                "status": "queued",
                "progress": {"done": 0, "total": line_total(payload)},
                "chunks": {"done": 0, "total": rows},
                "kind": job_kind(payload),
                "parameters": list(payload["parameters"]),
                "method": payload["method"],
                "backend": self.kind,
                "created": time.time(),
                "points": [],
                "result": None,
                "error": None,
                "cancel": threading.Event(),
                "owner": owner,
            }
        self._pool.submit(self._run, job_id, payload)
        return job_id, False

    def _run(self, job_id: str, payload: dict[str, Any]) -> None:
        job = self._jobs[job_id]
        if job["cancel"].is_set():
            return
        job["status"] = "running"
        rows = range(line_count(payload)) if job_kind(payload) == "phase_diagram" else [None]

        def on_point(_: int, pt: dict[str, Any]) -> None:
            with self._lock:
                job["points"].append(pt)
                job["progress"]["done"] += 1

        try:
            lines = []
            for row in rows:
                lines.append(run_line(payload, fixed=fixed_for_row(payload, row), on_point=on_point,
                                      should_stop=job["cancel"].is_set))
                with self._lock:
                    job["chunks"]["done"] += 1
            result = assemble_job(payload, lines)
            with self._lock:
                if job["cancel"].is_set():
                    job["status"] = "cancelled"
                    return
                job["result"] = result
                job["status"] = "finished"
                job["progress"]["done"] = job["progress"]["total"]
        except Cancelled:
            job["status"] = "cancelled"
        except Exception as exc:  # a failed job is reported, not raised
            log.exception("job %s failed", job_id)
            job["status"] = "failed"
            job["error"] = f"{type(exc).__name__}: {exc}"

    def status(self, job_id: str, detail: bool = False, raw_result: bool = False) -> dict[str, Any] | None:
        """The job's state; ``detail`` adds the points computed so far (``partial``) while it runs.
        (``raw_result`` is for the Redis backend, whose results are stored as JSON text; here they are objects.)"""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return None
            out = {k: v for k, v in job.items() if k not in ("cancel", "points", "owner")}
            out["progress"] = dict(job["progress"])
            out["chunks"] = dict(job["chunks"])
            if detail and job["result"] is None and job["points"]:
                out["partial"] = {"points": list(job["points"])}
            return out

    def cancel(self, job_id: str) -> bool:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return False
            job["cancel"].set()
            if job["status"] in ACTIVE:
                job["status"] = "cancelled"
            return True

    def _active(self, owner: str | None) -> int:
        return sum(1 for j in self._jobs.values() if j["owner"] == owner and j["status"] in ACTIVE)

    def active_for(self, owner: str | None) -> int:
        with self._lock:
            return self._active(owner)

    def shutdown(self) -> None:
        for job in self._jobs.values():
            job["cancel"].set()
        self._pool.shutdown(wait=False, cancel_futures=True)
