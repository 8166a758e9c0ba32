"""Two code versions on one Redis never share an answer: the source fingerprint is part of every key.

Two checkouts, identical but for one line of one theory file — this tree, and a copy of its source with
that line added — each run an API against the same redis-server (the copy in a subprocess, on its own
files). The second must compute its own solve (not be served the first's cached answer) and get a
computation of its own for the same sweep (not the first's job). Within one checkout, the cache and the
deduplication still work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.conftest import POTENTIAL, ROOT
from tests.redis_server import RedisServer

THEORY_FILE = "solvers/theories/rubin_cavity/potential/theory.py"

#: What each checkout's API does: solve twice, submit a sweep twice; returns what it saw.
SCRIPT = """
import json, sys
from fastapi.testclient import TestClient
import service.provenance as provenance
from service.app import create_app
from service.settings import Settings


def session(redis_url, spec):
    sweep = {"model": spec, "parameter": "u", "values": [20.0, 30.0, 40.0]}
    app = create_app(Settings(redis_url=redis_url, api_keys=(), rate_limit_per_minute=0, solve_processes=0))
    with TestClient(app) as c:
        solves = [c.post("/v1/solve", json={"model": spec}).json() for _ in range(2)]
        jobs = [c.post("/v1/sweeps", json=sweep).json() for _ in range(2)]
    return {"module": provenance.__file__, "source": provenance.SOURCE_FINGERPRINT,
            "solves": [{k: s[k] for k in ("cached", "spec_hash", "provenance")} for s in solves], "jobs": jobs}


if __name__ == "__main__":
    print(json.dumps(session(sys.argv[1], json.loads(sys.argv[2]))))
"""


def _checkout(dest: Path, edit: str) -> Path:
    for package in ("service", "solvers"):
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
    with open(dest / THEORY_FILE, "a") as f:
        f.write(edit)
    return dest


def _run(checkout: Path, redis_url: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONWARNINGS": "ignore"}
    env.pop("REDIS_URL", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT, redis_url, json.dumps(POTENTIAL)], cwd=checkout, env=env,
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_two_checkouts_on_one_redis_never_share_an_answer_or_a_job(fresh_redis: RedisServer, tmp_path: Path) -> None:
    first = ROOT
    second = _checkout(tmp_path / "second", edit="\n# the same theory, one comment later\n")

    here: dict[str, Any] = {}
    exec(compile(SCRIPT, "two_checkouts", "exec"), here)  # this checkout, in this process
    a = here["session"](fresh_redis.url, POTENTIAL)
    b = _run(second, fresh_redis.url)

    # Each ran its own copy, and the copies' fingerprints differ by that one line.
    assert Path(a["module"]).is_relative_to(first) and Path(b["module"]).is_relative_to(second)
    assert a["source"] != b["source"]
    # Within one checkout: computed once, then served from the cache; the sweep deduplicated.
    assert [s["cached"] for s in a["solves"]] == [False, True]
    assert [j["deduplicated"] for j in a["jobs"]] == [False, True]
    # The second checkout is never served the first's answer or job.
    assert [s["cached"] for s in b["solves"]] == [False, True]
    assert b["solves"][0]["spec_hash"] != a["solves"][0]["spec_hash"]
    assert b["solves"][0]["provenance"]["source"] == b["source"]
    assert a["solves"][1]["provenance"]["source"] == a["source"]
    assert [j["deduplicated"] for j in b["jobs"]] == [False, True]
    assert b["jobs"][0]["job_id"] != a["jobs"][0]["job_id"]
    r = fresh_redis.client()
    assert len(r.keys("saddlelab:solve:*")) == 2
    computations = [k for k in r.keys("saddlelab:job:*") if k.count(b":") == 2]
    assert len(computations) == 2
