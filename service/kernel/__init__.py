"""The job kernel: what every kind of job (sweep lines, phase-diagram rows, boundary lines, experiment chains)
shares, written once.

- :mod:`service.kernel.ownership` — owners and their keyed job ids, the per-key limit, the statuses;
- :mod:`service.kernel.records` — a computation's record in Redis (status compare-and-set, failure with its
  reason, execution log, writes retried across a Redis outage);
- :mod:`service.kernel.rq_units` — units of work on RQ: enqueueing, stopping, finding units RQ lost or failed,
  Redis errors as 503s;
- :mod:`service.kernel.stops` — how a unit stops early on any backend: cancelled, or handed back (SIGTERM);
- :mod:`service.kernel.unit_task` — one unit in an RQ work horse: its connection, the hand-back to the queue,
  the hard clock, a failure recorded with its reason;
- :mod:`service.kernel.waiting` — held status requests: O(1) looks at the status, a per-key cap.

A kind (:mod:`service.jobs` for sweeps, :mod:`service.experiments` for chains) plans its units, runs one and
assembles the result; the kernel does the rest.
"""
