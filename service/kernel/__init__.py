"""The job kernel: everything that every kind of job (sweep lines, phase-diagram rows, boundary lines, experiment
chains) shares, written once.

- :mod:`service.kernel.kind` — what a kind tells the kernel: plan its units, run one, assemble, describe;
- :mod:`service.kernel.local` — the embedded executor of every kind (fair slots, killable units);
- :mod:`service.kernel.rq_backend` — the RQ backend of every kind (the API side);
- :mod:`service.kernel.unit_task` — the RQ task of every kind: one unit in a work horse, its connection, the
  hand-back to the queue, the hard clock, a failure recorded with its reason;
- :mod:`service.kernel.backend` — what the API asks of a backend;
- :mod:`service.kernel.ownership` — owners and their keyed job ids, the per-key limit, the statuses;
- :mod:`service.kernel.records` — a computation's record in Redis (status compare-and-set, failure with its
  reason, execution log, writes retried across a Redis outage);
- :mod:`service.kernel.rq_units` — units of work on RQ: enqueueing, stopping, finding units RQ lost or failed,
  Redis errors as 503s;
- :mod:`service.kernel.stops` — how a unit stops early on any backend: cancelled, or handed back (SIGTERM);
- :mod:`service.kernel.stored_bytes`, :mod:`service.kernel.pages` — bytes bounded in storage and in pages;
- :mod:`service.kernel.waiting` — held status requests: O(1) looks at the status, a per-key cap.

The kinds are :mod:`service.jobs` (sweep lines) and :mod:`service.experiments` (chains).
"""
