"""The API process keeps freed heap memory (service/heap.py): a second large response reuses the first one's pages."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

import service.app
from service.heap import keep_heap
from tests.service.conftest import settings

# A response's life in a request thread: 200 point texts of 11 kB joined, wrapped and encoded (as the job route
# builds a sweep's page), six times over; the page faults of each round, counted by the kernel.
BUILDS = """
import json, resource, sys, threading
from service.heap import keep_heap
kept = keep_heap() if sys.argv[1] == "keep" else None
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
texts = ["x" * 11000 for _ in range(200)]
rounds = []
def build():
    body = ("{" + ",".join(texts) + "}").encode()
    return len(body)
def run():
    for _ in range(6):
        before = faults()
        build()
        rounds.append(faults() - before)
t = threading.Thread(target=run)
t.start()
t.join()
print(json.dumps({"kept": kept, "faults": rounds}))
"""


def _rounds(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", BUILDS, mode], capture_output=True, text=True, timeout=120,
                         check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_a_second_large_response_reuses_the_pages_of_the_first() -> None:
    default, kept = _rounds("default"), _rounds("keep")
    assert kept["kept"] is True
    # 2.2 MB is about 540 pages: by default every round faults at least one copy's pages in again
    assert min(default["faults"][1:]) > 400, default
    # kept: after the first round, next to none (a few pages of the interpreter's own)
    assert max(kept["faults"][1:]) < 40, kept


def test_the_app_keeps_its_heap_when_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    monkeypatch.setattr(service.app, "keep_heap", lambda: calls.append(True) or True)
    with TestClient(service.app.create_app(settings())) as c:
        assert c.get("/healthz").status_code == 200
    assert calls == [True]


def test_keep_heap_says_whether_it_could() -> None:
    assert keep_heap() is (platform.libc_ver()[0] == "glibc")
