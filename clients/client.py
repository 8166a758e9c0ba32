"""The SaddleLab client: plain HTTP (httpx), explicit timeouts, typed errors.

    from clients import Client
    lab = Client("http://lab-server:8000", api_key="...")
    result = lab.sweep({"theory": "rubin_cavity", "mode": "potential"}, "u", {"start": 20, "stop": 40, "num": 41})
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from clients.errors import (
    ConnectionFailed,
    JobCancelled,
    JobFailed,
    JobTimeout,
    SaddleLabError,
    ServiceUnavailable,
    from_response,
)
from clients.experiments import ExperimentResult

try:
    import orjson as _orjson
except ImportError:  # an optional speed-up (the client extra): the standard library reads the same JSON
    _orjson = None

TERMINAL = ("finished", "failed", "cancelled")
DEFAULT_URL = "http://127.0.0.1:8000"

Values = Mapping[str, Any] | Iterable[float]


def values_spec(values: Any) -> Any:
    """A list of numbers (lists, tuples, ranges, numpy arrays) or a ``{"start", "stop", "num"}`` mapping (with
    ``"scale": "log"``: evenly spaced on a log scale)."""
    if isinstance(values, Mapping):
        return dict(values)
    if hasattr(values, "tolist"):
        values = values.tolist()
    return [float(v) for v in values]


#: The shortest wait between two status reads of a job, and the fraction of the time waited so far it grows with.
MIN_POLL, POLL_FRACTION = 0.02, 0.1
#: The longest a server holds a status request (``?wait=``), and how long :meth:`Client.wait` asks it to hold one
#: when no progress bar is shown.
MAX_WAIT, QUIET_WAIT = 30.0, 10.0


def path_segment(job_id: str) -> str:
    """A job id as one path segment: every reserved character percent-encoded, dots too, so that no id
    ("..", "../experiments/x", "a/b?c") can leave its route (httpx resolves dot segments before sending)."""
    return quote(str(job_id), safe="").replace(".", "%2E")


class Client:
    """A SaddleLab server. ``timeout`` (seconds) applies to each HTTP request; solves can take a while."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        timeout: float = 120.0,
        *,
        poll_interval: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ):
        headers = {"User-Agent": "saddlelab-client"}
        if api_key:
            headers["X-API-Key"] = api_key
        self.base_url = base_url.rstrip("/")
        self.poll_interval = poll_interval
        self.last_job_id: str | None = None
        self._tables: dict[str, dict[str, dict[str, Any]]] | None = None
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=httpx.Timeout(timeout),
                                  transport=transport)

    # ---- plumbing ---------------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    def _request(self, method: str, path: str, **kw: Any) -> Any:
        try:
            r = self._http.request(method, path, **kw)
        except httpx.TimeoutException as exc:
            raise ConnectionFailed(f"no answer from {self.base_url} within the timeout ({exc})") from exc
        except httpx.TransportError as exc:
            raise ConnectionFailed(f"cannot reach {self.base_url}: {exc}") from exc
        body = _decoded(r)
        if r.is_error:
            raise from_response(r.status_code, body, dict(r.headers))
        return body

    # ---- the API ----------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """``{"status", "cache", "redis", "version", "auth"}``."""
        return self._request("GET", "/healthz")

    def theories(self) -> list[dict[str, Any]]:
        """Installed theories: name, summary, JSON schema of the spec, sweepable fields, table of quantities."""
        theories = self._request("GET", "/v1/theories")
        self._tables = {t["name"]: {q["name"]: q for q in t.get("quantities", [])} for t in theories}
        return theories

    def quantities(self, theory: str) -> dict[str, dict[str, Any]]:
        """The theory's quantity table: dotted name -> ``{"name", "symbol", "description", "groups", "dims"}``
        (fetched once per client, with :meth:`theories`). The one source of labels and symbols."""
        if self._tables is None:
            self.theories()
        assert self._tables is not None
        if theory not in self._tables:
            raise KeyError(f"the server has no theory {theory!r}; it has {', '.join(sorted(self._tables))}")
        return self._tables[theory]

    def to_xarray(self, result: Mapping[str, Any]) -> Any:
        """The result as labelled arrays (``clients.arrays.to_xarray``) with the theory's symbols, units and dims (the
        result's own ``quantities``; the served table for a result without them); an experiment as its ArviZ
        ``DataTree`` (:meth:`ExperimentResult.to_datatree`). Needs the ``arrays`` extra."""
        if isinstance(result, ExperimentResult):
            return result.to_datatree()
        from clients.arrays import to_xarray

        return to_xarray(result, None if result.get("quantities") else self.quantities(result["theory"]))

    def solve(self, model: Mapping[str, Any], solver: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Solve one spec: every branch, the equilibrium, diagnostics (``cached`` says if it was computed before)."""
        body: dict[str, Any] = {"model": dict(model)}
        if solver is not None:
            body["solver"] = dict(solver)
        return self._request("POST", "/v1/solve", json=body)

    def submit_sweep(
        self,
        model: Mapping[str, Any],
        parameter: str | Sequence[str],
        values: Values | Sequence[Values],
        method: str = "continuation",
        solver: Mapping[str, Any] | None = None,
        lines: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Start a sweep (or, with two parameters and two value specs, a phase diagram); returns ``{"job_id", …}``.

        ``method="boundary"`` (two parameters) traces the transition lines instead: the first value spec
        gives the range of p1, the second the bracket of p2; ``lines`` are the line options."""
        two = not isinstance(parameter, str)
        body: dict[str, Any] = {
            "model": dict(model),
            "parameter": list(parameter) if two else parameter,
            "values": [values_spec(v) for v in values] if two else values_spec(values),  # type: ignore[union-attr]
            "method": method,
        }
        if solver is not None:
            body["solver"] = dict(solver)
        if lines is not None:
            body["lines"] = dict(lines)
        accepted = self._request("POST", "/v1/sweeps", json=body)
        self.last_job_id = accepted["job_id"]
        return accepted

    def job(self, job_id: str, detail: bool = False, *, offset: int | None = None,
            limit: int | None = None, wait: float | None = None) -> dict[str, Any]:
        """Status, progress and (when finished) result of a job.

        Results come in pages (``page`` in the response). Without ``offset``/``limit`` every page is
        fetched and the points joined, so ``result["points"]`` (or ``partial["points"]`` with ``detail``)
        holds them all; with them, the one page asked for is returned as the server sent it. ``wait``:
        the server may hold the answer that many seconds while the job runs, and answers as soon as it ends.
        """
        path = f"/v1/jobs/{path_segment(job_id)}"
        params: dict[str, Any] = {"detail": "true"} if detail else {}
        first = {**params, "wait": wait} if wait else params
        if offset is not None or limit is not None:
            page = {**first, **({"offset": offset} if offset is not None else {}),
                    **({"limit": limit} if limit is not None else {})}
            return self._request("GET", path, params=page)
        for attempt in range(3):  # the job may finish while its pages are read: read again, a bounded number of times
            status = self._request("GET", path, params=(first if attempt == 0 else params) or None)
            joined = self._join_pages(path, params, status)
            if joined is not None:
                return joined
        return status

    def _join_pages(self, path: str, params: dict[str, Any], status: dict[str, Any]) -> dict[str, Any] | None:
        """``status`` with the points (and traced curves) of every later page appended; None if the job changed
        meanwhile."""
        page = status.get("page")
        if not page:
            return status
        which = page["of"]
        holder = status["result"] if which == "result.points" else status["partial"]
        points = list(holder["points"])
        while page["next"] is not None:
            more = self._request("GET", path, params={**params, "offset": page["next"], "limit": page["limit"],
                                                      "curve_limit": 0})
            page = more.get("page")
            if not page or page["of"] != which:
                return None
            points.extend((more["result"] if which == "result.points" else more["partial"])["points"])
        holder["points"] = points
        status["page"] = {**page, "offset": 0, "returned": len(points), "next": None}
        curve_page = status.get("curve_page")
        if curve_page:
            curves = list(status["result"]["curves"])
            while curve_page["next"] is not None:
                more = self._request("GET", path, params={**params, "limit": 0, "curve_offset": curve_page["next"],
                                                          "curve_limit": curve_page["limit"]})
                curve_page = more.get("curve_page")
                if not curve_page or more.get("result") is None:
                    return None
                curves.extend(more["result"]["curves"])
            status["result"]["curves"] = curves
            status["curve_page"] = {**curve_page, "offset": 0, "returned": len(curves), "next": None}
        return status

    def cancel(self, job_id: str) -> dict[str, Any]:
        """Cancel a job; returns its status."""
        return self._request("DELETE", f"/v1/jobs/{path_segment(job_id)}")

    def wait(self, job_id: str, progress: bool = True, timeout: float | None = None,
             status: Callable[[str], dict[str, Any]] | None = None, unit: str = "pt") -> dict[str, Any]:
        """Block until the job ends; return its result (raise :class:`JobFailed` / :class:`JobCancelled`).

        ``status`` reads the job's status (default: :meth:`job`; :meth:`experiment_status` for experiments). The
        status is read again after a tenth of the time waited so far (at least 20 ms, at most ``poll_interval``),
        so a short job is seen finished within a tenth of its duration, and a long one costs few requests. A job's
        status is asked with ``wait``: the server holds the answer until the job ends or that time passes, so the
        end is seen at once — ``poll_interval`` with a progress bar (it moves that often), else 10 s (a short job
        is one request); a server that does not hold answers is read as above.
        """
        hold = min(self.poll_interval if progress else QUIET_WAIT, MAX_WAIT)
        read = status or (lambda j: self.job(j, wait=hold))
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        bar = _ProgressBar(job_id, unit) if progress else None
        failures = 0
        try:
            while True:
                asked = time.monotonic()
                try:
                    status_ = read(job_id)
                    failures = 0
                except (ConnectionFailed, ServiceUnavailable):
                    failures += 1  # a restarting server or a Redis blip: keep waiting a little
                    if failures > 5:
                        raise
                    status_ = None
                if status_ is not None:
                    if bar is not None:
                        bar.update(status_)
                    if status_["status"] in TERMINAL:
                        return _outcome(status_)
                now = time.monotonic()
                if deadline is not None and now > deadline:
                    raise JobTimeout(f"job {job_id} still running after {timeout} s", job_id)
                # a server that held the request has waited already
                pause = min(self.poll_interval, max(MIN_POLL, POLL_FRACTION * (now - started)))
                time.sleep(max(0.0, pause - (now - asked)))
        finally:
            if bar is not None:
                bar.close()

    def sweep(
        self,
        model: Mapping[str, Any],
        parameter: str | Sequence[str],
        values: Values | Sequence[Values],
        method: str = "continuation",
        progress: bool = True,
        solver: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        lines: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run a sweep (or phase diagram, or boundary job) to the end, with a progress bar; returns the result."""
        accepted = self.submit_sweep(model, parameter, values, method=method, solver=solver, lines=lines)
        return self.wait(accepted["job_id"], progress=progress, timeout=timeout)

    # ---- experiments ------------------------------------------------------------------------
    def submit_experiment(
        self,
        model: Mapping[str, Any],
        sampler: Mapping[str, Any] | None = None,
        *,
        sizes: Mapping[str, Any] | None = None,
        parameter: str | None = None,
        values: Values | None = None,
        network_seed: int = 0,
        solver: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Start sampling the spec's finite network (a learning curve with ``parameter`` and ``values``)."""
        body: dict[str, Any] = {"model": dict(model), "network_seed": network_seed}
        for key, value in (("sampler", sampler), ("sizes", sizes), ("solver", solver)):
            if value is not None:
                body[key] = dict(value)
        if parameter is not None:
            body["parameter"] = parameter
            body["values"] = values_spec(values)
        accepted = self._request("POST", "/v1/experiments", json=body)
        self.last_job_id = accepted["job_id"]
        return accepted

    def experiment_status(self, job_id: str, detail: bool = False) -> dict[str, Any]:
        """Status, progress (draws) and (when finished) result of an experiment."""
        params = {"detail": "true"} if detail else None
        return self._request("GET", f"/v1/experiments/{path_segment(job_id)}", params=params)

    def experiment_draws(self, job_id: str, point: int = 0) -> dict[str, Any]:
        """The per-draw series of one point of a finished experiment (bounded and thinned by the server)."""
        return self._request("GET", f"/v1/experiments/{path_segment(job_id)}/draws", params={"point": point})

    def cancel_experiment(self, job_id: str) -> dict[str, Any]:
        return self._request("DELETE", f"/v1/experiments/{path_segment(job_id)}")

    def experiment(
        self,
        model: Mapping[str, Any],
        sampler: Mapping[str, Any] | None = None,
        *,
        sizes: Mapping[str, Any] | None = None,
        parameter: str | None = None,
        values: Values | None = None,
        network_seed: int = 0,
        solver: Mapping[str, Any] | None = None,
        progress: bool = True,
        timeout: float | None = None,
    ) -> ExperimentResult:
        """Sample the spec's finite network to the end, with a progress bar in draws; returns the result.

        ``result["observables"][name]`` holds ``mean``, ``stderr``, ``ess``, ``rhat``; ``result["theory"]`` the
        solve of the same spec with a ``comparison`` per branch; ``result.to_datatree()`` the ArviZ ``DataTree``.
        """
        accepted = self.submit_experiment(model, sampler, sizes=sizes, parameter=parameter, values=values,
                                          network_seed=network_seed, solver=solver)
        job_id = accepted["job_id"]
        data = self.wait(job_id, progress=progress, timeout=timeout, status=self.experiment_status, unit="draw")
        request = {"model": dict(model), "sampler": dict(sampler or {}), "sizes": dict(sizes or {}),
                   "network_seed": network_seed}
        return self.experiment_result(job_id, data, request)

    def experiment_result(self, job_id: str, data: Mapping[str, Any],
                          request: Mapping[str, Any] | None = None) -> ExperimentResult:
        """A finished experiment's result that fetches its draws and symbols from this server (``request``: what was
        submitted, kept with the arrays)."""
        theory = str(data.get("theory_name") or (request or {}).get("model", {}).get("theory"))
        return ExperimentResult(data, job_id, lambda point: self.experiment_draws(job_id, point), request,
                                lambda: self.quantities(theory))

    def boundaries(
        self,
        model: Mapping[str, Any],
        parameters: Sequence[str],
        p1_range: Sequence[float],
        p2_bracket: Sequence[float],
        *,
        lines: Mapping[str, Any] | None = None,
        solver: Mapping[str, Any] | None = None,
        progress: bool = True,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """The transition lines of ``model`` traced over p1 ∈ p1_range, looked for in p2 ∈ p2_bracket.

        Returns ``{"lines": [{"kind", "type", "branches", "points": [[p1, p2], …], "ends"}, …],
        "critical_points", "reason", …}`` (``reason`` says why ``lines`` is empty when it is)."""
        values = [[float(min(p1_range)), float(max(p1_range))], [float(min(p2_bracket)), float(max(p2_bracket))]]
        return self.sweep(model, list(parameters), values, method="boundary", progress=progress, solver=solver,
                          timeout=timeout, lines=lines)


def _decoded(r: httpx.Response) -> Any:
    """The response's JSON, or its text when it is not JSON. orjson, where installed, reads a sweep's result
    (megabytes) six times faster than the standard library; what it refuses is read by the standard library."""
    if _orjson is not None:
        try:
            return _orjson.loads(r.content)
        except ValueError:
            pass
    try:
        return r.json()
    except ValueError:
        return r.text


def _outcome(status: dict[str, Any]) -> dict[str, Any]:
    if status["status"] == "finished":
        return status["result"]
    if status["status"] == "cancelled":
        raise JobCancelled(f"job {status['job_id']} was cancelled", status)
    raise JobFailed(f"job {status['job_id']} failed: {status.get('error') or 'no reason given'}", status)


class _ProgressBar:
    """A tqdm bar when tqdm is installed (notebook-aware via tqdm.auto); nothing otherwise."""

    def __init__(self, job_id: str, unit: str = "pt"):
        self.job_id = job_id
        self.unit = unit
        self._bar: Any = None
        self._counts = True
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self._tqdm = None
        else:
            self._tqdm = tqdm

    def update(self, status: dict[str, Any]) -> None:
        if self._tqdm is None:
            return
        done, total = status["progress"]["done"], status["progress"]["total"]
        if self._bar is None:
            self._counts = status.get("kind") != "boundary"
            if self._counts:
                # What was done before we looked (a job shared with an identical earlier one) is the start, not
                # speed: counted into the rate it would read as a million points per second.
                self._bar = self._tqdm(total=total, initial=done, desc=f"job {self.job_id[:8]}", unit=self.unit,
                                       leave=True)
            else:
                # A boundary job has one result and no points to count: its time and status only.
                self._bar = self._tqdm(total=None, desc=f"job {self.job_id[:8]} (tracing lines)", leave=True,
                                       bar_format="{desc}: {elapsed}{postfix}")
        self._bar.set_postfix_str(status["status"], refresh=False)
        if self._counts:
            self._bar.update(max(0, done - self._bar.n))
        else:
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


__all__ = ["Client", "SaddleLabError", "values_spec"]
