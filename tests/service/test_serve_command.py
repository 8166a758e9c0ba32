"""The README's first command serves: a live server on the embedded default answers the potential spec."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx

from tests.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]
SPEC = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45}


def test_serve_script_answers_health_and_the_potential_spec() -> None:
    port = free_port()
    env = {**os.environ, "SADDLELAB_PORT": str(port)}
    env.pop("REDIS_URL", None)
    proc = subprocess.Popen([str(ROOT / "scripts" / "serve.sh")], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # a fresh checkout installs the client extra first
        while True:
            assert proc.poll() is None, "the serve command exited"
            try:
                health = httpx.get(f"{base}/healthz", timeout=2).json()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.2)
        assert health == {**health, "status": "ok", "cache": "memory", "redis": None}
        body = httpx.post(f"{base}/v1/solve", json={"model": SPEC}, timeout=60).json()
        rhos = sorted(abs(w["rho"]) for w in body["observables"]["potential_wells"])
        assert rhos[0] == 0.0 and abs(rhos[-1] - 2**-0.5) < 1e-3
        assert httpx.post(f"{base}/v1/solve", json={"model": SPEC}, timeout=60).json()["cached"] is True
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(20)
