"""Every operation of the OpenAPI document has its own operationId (client generators rely on it)."""

from __future__ import annotations

import warnings

from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings


def test_operation_ids_are_unique_and_the_schema_builds_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # FastAPI warns on a duplicate id: that warning must not occur
        app = create_app(Settings(redis_url=None))
        schema = TestClient(app).get("/openapi.json").json()
    ids = [op["operationId"] for item in schema["paths"].values() for op in item.values() if "operationId" in op]
    assert len(ids) == len(set(ids)), sorted(ids)
    job = schema["paths"]["/v1/jobs/{job_id}"]
    assert {"get", "delete"} <= set(job) and job["get"]["operationId"] != job["delete"]["operationId"]


def test_one_route_still_lists_both_methods_in_allow() -> None:
    with TestClient(create_app(Settings(redis_url=None))) as c:
        r = c.put("/v1/jobs/abc")
    assert r.status_code == 405
    assert {m.strip() for m in r.headers["allow"].split(",")} >= {"GET", "DELETE"}
