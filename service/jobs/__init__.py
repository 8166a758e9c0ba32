"""Sweep lines: sweeps, phase diagrams (one line per row) and boundary jobs as a kind of the job kernel
(:mod:`service.kernel`), which owns, queues, runs, stops and reports them.

- :mod:`service.jobs.shape` — how a sweep is cut into lines, and the points it stores;
- :mod:`service.jobs.lines` — running one line (on every backend) and assembling results;
- :mod:`service.jobs.rq_kind` — the kind on RQ: its state in Redis (:mod:`service.jobs.store`), a line in a
  work horse;
- :mod:`service.jobs.local_kind` — the kind on the embedded executor: its state in memory, a line in a child
  process;
- :mod:`service.jobs.in_process` — a whole job computed in this process, without a backend.
"""
