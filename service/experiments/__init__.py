"""Experiments as a kind of the job kernel (:mod:`service.kernel`): the finite network behind a theory, sampled
chain by chain, beside the theory's solve. The unit of work is one chain of one point.

- :mod:`service.experiments.schemas` — the request and status models of ``/v1/experiments``;
- :mod:`service.experiments.plan` — validating a request (one limit check) into a hashable payload;
- :mod:`service.experiments.store` — where chains keep their checkpoints and blocks of draws (the protocol,
  and the in-memory store of the embedded default); :mod:`service.experiments.redis_store` — the same in Redis;
- :mod:`service.experiments.runner` — running one chain block by block, assembling a point and the result
  (on every backend);
- :mod:`service.experiments.rq_kind` and :mod:`service.experiments.local_kind` — the kind on RQ workers and on
  the embedded executor;
- :mod:`service.experiments.in_process` — an experiment run in this process, without a server.
"""
