"""Jobs: sweeps and phase diagrams cut into lines, run by a :class:`~service.jobs.backend.JobBackend`.

- :mod:`service.jobs.lines` — running one line (shared by every backend) and assembling results;
- :mod:`service.jobs.local` — the in-process executor of the embedded default;
- :mod:`service.jobs.store` — SaddleLab's job state in Redis (keys, Lua scripts);
- :mod:`service.jobs.rq_backend` — the API side of the RQ backend (submit, status, cancel);
- :mod:`service.jobs.task` — the task an RQ worker runs.
"""
