"""Experiments as jobs: the finite network behind a theory, sampled chain by chain, beside the theory's solve.

- :mod:`service.experiments.schemas` — the request and status models of ``/v1/experiments``;
- :mod:`service.experiments.plan` — validating a request (one limit check) into a hashable payload;
- :mod:`service.experiments.store` — where chains keep their checkpoints and blocks of draws (the protocol,
  and the in-memory store of the embedded default); :mod:`service.experiments.redis_store` — the same in Redis;
- :mod:`service.experiments.runner` — running one chain block by block, assembling a point and the result
  (shared by every backend);
- :mod:`service.experiments.local` — the in-process executor (no Redis);
- :mod:`service.experiments.rq_backend` and :mod:`service.experiments.task` — RQ workers, one job per chain.
"""
