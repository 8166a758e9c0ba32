"""Two code versions on one Redis never share an answer: the source fingerprint is part of every key.

Two copies of the source tree, identical but for one line of one theory file, each run an API (in a
subprocess, on its own copy) against the same redis-server. The second copy must compute its own solve
(not be served the first's cached answer) and get a computation of its own for the same sweep (not the
first's job). Within one copy, the cache and the deduplication still work.
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

#: What each checkout's API does: solve twice, submit a sweep twice; prints what it saw as JSON.
SCRIPT = """
import json, sys
from fastapi.testclient import TestClient
import service.provenance as provenance
from service.app import create_app
from service.settings import Settings

spec = json.loads(sys.argv[2])
sweep = {"model": spec, "parameter": "u", "values": [20.0, 30.0, 40.0]}
app = create_app(Settings(redis_url=sys.argv[1], api_keys=(), rate_limit_per_minute=0, solve_processes=0))
with TestClient(app) as c:
    solves = [c.post("/v1/solve", json={"model": spec}).json() for _ in range(2)]
    jobs = [c.post("/v1/sweeps", json=sweep).json() for _ in range(2)]
print(json.dumps({"module": provenance.__file__, "source": provenance.SOURCE_FINGERPRINT,
                  "solves": [{k: s[k] for k in ("cached", "spec_hash", "provenance")} for s in solves],
                  "jobs": jobs}))
"""


def _checkout(dest: Path, edit: str | None = None) -> Path:
    for package in ("service", "solvers"):
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
    if edit is not None:
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
    first = _checkout(tmp_path / "first")
    second = _checkout(tmp_path / "second", edit="\n# the same theory, one comment later\n")

    a = _run(first, fresh_redis.url)
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
