"""In-process job executor, used when no Redis is configured.

Same API as the RQ backend: submit (deduplicated by the sweep's key), status with progress,
cancel. Points are appended as they are computed, so the status shows them before the end.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from service.sweep_runner import Cancelled, assemble_diagram, run_line

log = logging.getLogger("saddlelab.jobs")


class LocalJobs:
    kind = "local"

    def __init__(self, workers: int = 2):
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="saddlelab-job")
        self._jobs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def submit(self, payload: dict[str, Any], owner: str | None = None) -> tuple[str, bool]:
        job_id = payload["key"]
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and job["status"] not in ("failed", "cancelled"):
                return job_id, True
            total = len(payload["axes"][-1]) * (len(payload["axes"][0]) if len(payload["axes"]) == 2 else 1)
            self._jobs[job_id] = {
                "job_id": job_id,
                "status": "queued",
                "progress": {"done": 0, "total": total},
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

        def on_point(pt: dict[str, Any]) -> None:
            with self._lock:
                job["points"].append(pt)
                job["progress"]["done"] += 1

        try:
            if len(payload["parameters"]) == 1:
                result = run_line(payload, on_point=on_point, should_stop=job["cancel"].is_set)
            else:
                rows = []
                for v1 in payload["axes"][0]:
                    rows.append(run_line(payload, fixed={payload["parameters"][0]: v1}, on_point=on_point,
                                         should_stop=job["cancel"].is_set))
                result = assemble_diagram(payload, rows)
            with self._lock:
                if job["cancel"].is_set():
                    job["status"] = "cancelled"
                    return
                job["result"] = result
                job["status"] = "finished"
                job["progress"]["done"] = job["progress"]["total"]
        except Cancelled:
            job["status"] = "cancelled"
        except Exception as exc:
            log.exception("job %s failed", job_id)
            job["status"] = "failed"
            job["error"] = f"{type(exc).__name__}: {exc}"

    def status(self, job_id: str) -> dict[str, Any] | None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return None
            out = {k: v for k, v in job.items() if k not in ("cancel", "points", "owner")}
            out["progress"] = dict(job["progress"])
            if job["result"] is None and job["points"]:
                out["partial"] = {"points": list(job["points"])}
            return out

    def cancel(self, job_id: str) -> bool:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return False
            job["cancel"].set()
            if job["status"] in ("queued", "running"):
                job["status"] = "cancelled"
            return True

    def active_for(self, owner: str | None) -> int:
        with self._lock:
            return sum(1 for j in self._jobs.values() if j["owner"] == owner and j["status"] in ("queued", "running"))

    def shutdown(self) -> None:
        for job in self._jobs.values():
            job["cancel"].set()
        self._pool.shutdown(wait=False, cancel_futures=True)
