"""The ``saddlelab`` command: serve, run a worker, and talk to a server.

    saddlelab serve                      # the API on $SADDLELAB_HOST:$SADDLELAB_PORT (embedded, or Redis via REDIS_URL)
    saddlelab worker                     # an RQ worker on $REDIS_URL
    saddlelab solve SPEC.json [--format netcdf -o solve.nc]      # one solve, JSON on stdout
    saddlelab sweep SPEC.json --parameter u --start 20 --stop 40 --num 41 [--format csv|netcdf] [-o out.csv]
    saddlelab sweep SPEC.json --parameter b --values 0.25,0.3 --parameter u --start 20 --stop 40 --num 81
                                                                          # phase diagram: each --parameter takes
                                                                          # --values or --start/--stop/--num
    saddlelab sweep SPEC.json --method boundary --parameter b --start 0.25 --stop 0.4 \
        --parameter u --start 10 --stop 60                                    # traced transition lines
    saddlelab experiment SPEC.json --chains 4 --draws 2000 [--sizes '{"d": 64}'] [--parameter T --values 0.1,1] \
        [--format csv | --format netcdf -o run.nc]                          # netCDF: the ArviZ DataTree
    saddlelab job ID | cancel ID | theories | health

The client commands talk to ``--url`` (default $SADDLELAB_URL or http://127.0.0.1:8000) with
``--api-key`` (default $SADDLELAB_API_KEY). SPEC.json holds a model (``{"theory": …}``) or a whole
request (``{"model": …, "solver": …}``); ``-`` reads it from stdin. ``--format netcdf`` writes the result's
labelled arrays (``clients.arrays``; an experiment's ArviZ DataTree) to the ``-o`` file; it needs the client's
``arrays`` extra (xarray, h5netcdf and h5py, arviz-base).

A job's JSON result (sweep, experiment, job) goes to ``-o FILE``; without it, to stdout when stdout is a pipe or a
file, and on a terminal to ``./<command>-<job id>.json`` with a summary of a screen at most (``--json`` prints it
whole instead). ``--log`` after ``--start/--stop/--num`` spaces that range on a log scale. Every output path is
checked before anything is submitted (a usage error, exit status 2).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from clients import Client, SaddleLabError, experiment_csv, to_csv
from clients.install_hints import install_hint
from clients.tables import ALL_BRANCHES

DEFAULT_URL = "http://127.0.0.1:8000"


# ---------------------------------------------------------------------------------------------
# arguments
# ---------------------------------------------------------------------------------------------


def _client_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default=os.environ.get("SADDLELAB_URL", DEFAULT_URL), help="server (default: %(default)s)")
    p.add_argument("--api-key", default=os.environ.get("SADDLELAB_API_KEY"), help="API key ($SADDLELAB_API_KEY)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per HTTP request (default: %(default)s)")


class _AxisOption(argparse.Action):
    """``--parameter`` opens an axis; ``--values`` or ``--start/--stop/--num`` after it fill that axis."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any,
                 option_string: str | None = None) -> None:
        axes = [dict(a) for a in getattr(namespace, "axes", None) or []]
        if self.dest == "parameter":
            axes.append({"parameter": value})
        else:
            if not axes:
                axes.append({})  # a value before any --parameter: reported by sweep_axes
            if self.dest in axes[-1]:
                raise argparse.ArgumentError(self, f"given twice for --parameter {axes[-1].get('parameter')}")
            axes[-1][self.dest] = value
        namespace.axes = axes


class _AxisFlag(_AxisOption):
    """``--log``: the range of the --parameter before it is spaced evenly in its logarithm."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any,
                 option_string: str | None = None) -> None:
        super().__call__(parser, namespace, True, option_string)


def _axis_options(p: argparse.ArgumentParser, what: str) -> None:
    p.set_defaults(axes=[])
    p.add_argument("--parameter", action=_AxisOption, help=what)
    p.add_argument("--values", action=_AxisOption, help="comma-separated values of the --parameter before it")
    p.add_argument("--start", action=_AxisOption, type=float, help="first value of the --parameter before it")
    p.add_argument("--stop", action=_AxisOption, type=float, help="last value, included")
    p.add_argument("--num", action=_AxisOption, type=int, help="number of values")
    p.add_argument("--log", action=_AxisFlag, help="space the --start/--stop/--num values of the --parameter before "
                   "it evenly on a log scale (start, stop > 0)")


def _output_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", default=None, help="write here instead of stdout (required with netcdf)")


def _result_options(p: argparse.ArgumentParser) -> None:
    """A job's JSON result on a terminal: to a file with a summary, unless --json (or -o) says otherwise."""
    p.add_argument("-o", "--output", default=None,
                   help="write the result here (required with netcdf). Without it, a JSON result goes to stdout "
                   "when stdout is a pipe or a file, and on a terminal to ./<command>-<job id>.json, with a summary "
                   "of a screen at most on the terminal")
    p.add_argument("--json", action="store_true", help="print the whole JSON result on stdout, even on a terminal")


NETCDF_HELP = "netcdf: the labelled arrays (xarray) as a netCDF-4 file, to -o"


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="saddlelab", description="SaddleLab: serve, work, solve and sweep.")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("serve", help="serve the HTTP API with uvicorn")
    p.add_argument("--host", default=None, help="bind address (default: $SADDLELAB_HOST or 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default: $SADDLELAB_PORT or 8000)")
    p.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (default: 1)")

    p = sub.add_parser("worker", help="run an RQ worker for sweeps and phase diagrams (needs REDIS_URL)")
    p.add_argument("--url", default=None, help="Redis URL (default: $REDIS_URL)")
    p.add_argument("--name", default=None, help="worker name (default: <host>.<pid>)")
    p.add_argument("--burst", action="store_true", help="quit when the queue is empty")

    p = sub.add_parser("solve", help="solve one spec")
    p.add_argument("spec", help="JSON file with the model or the whole request ('-' = stdin)")
    p.add_argument("--solver", default=None, help="JSON file with solver options")
    p.add_argument("--format", choices=["json", "netcdf"], default="json", help=f"default: json; {NETCDF_HELP}")
    _client_options(p)
    _output_option(p)

    p = sub.add_parser("sweep", help="sweep one parameter (or two: a phase diagram) and wait for the result")
    p.add_argument("spec", help="JSON file with the model or the whole request ('-' = stdin)")
    _axis_options(p, "field to sweep; twice for a phase diagram")
    p.add_argument("--method", choices=["continuation", "grid", "boundary", "deflated", "diagram"], default=None,
                   help="default: continuation; boundary (two parameters): trace the transition lines, p1 over "
                   "[start, stop], looked for in p2 within [start, stop] (no --num needed)")
    p.add_argument("--lines", default=None, help="JSON file with line options (method boundary)")
    p.add_argument("--solver", default=None, help="JSON file with solver options")
    p.add_argument("--format", choices=["json", "csv", "netcdf"], default="json",
                   help=f"output format (default: json); csv opens with '# units: {{...}}' and '# symbols: {{...}}' "
                   f"lines (pandas.read_csv(path, comment='#')); {NETCDF_HELP}")
    p.add_argument("--branch", default=None,
                   help=f"CSV: columns of this branch instead of the equilibrium; '{ALL_BRANCHES}': every branch, one "
                   "row per point and branch")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--detach", action="store_true", help="print the job id and return without waiting")
    _client_options(p)
    _result_options(p)

    p = sub.add_parser("experiment", help="sample the spec's finite network beside the theory and wait for the result")
    p.add_argument("spec", help="JSON file with the model or the whole request ('-' = stdin)")
    p.add_argument("--method", default=None, help="nuts, hmc, mala, langevin, sgld (default: nuts)")
    p.add_argument("--chains", type=int, default=None, help="chains (each one job; default 4)")
    p.add_argument("--warmup", type=int, default=None, help="warmup steps per chain (default 1000)")
    p.add_argument("--draws", type=int, default=None, help="kept draws per chain (default 1000)")
    p.add_argument("--thin", type=int, default=None, help="steps per kept draw (default 1)")
    p.add_argument("--seed", type=int, default=None, help="seed of the chains (default 0)")
    p.add_argument("--init", default=None, help="initialisation: prior, or teacher where the network has one")
    p.add_argument("--sampler", default=None, help="JSON file with further sampler options")
    p.add_argument("--sizes", default=None, help="the network's finite sizes: inline JSON or a JSON file")
    p.add_argument("--network-seed", type=int, default=None, help="seed of the teacher and data (default 0)")
    _axis_options(p, "a learning curve in this field")
    p.add_argument("--format", choices=["json", "csv", "netcdf"], default="json",
                   help=f"csv: one row per point and observable, with its units and symbol; {NETCDF_HELP} (the ArviZ "
                   "DataTree)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--detach", action="store_true", help="print the job id and return without waiting")
    _client_options(p)
    _result_options(p)

    p = sub.add_parser("job", help="status (and result) of a job")
    p.add_argument("job_id")
    p.add_argument("--detail", action="store_true", help="include partial points and executions")
    _client_options(p)
    _result_options(p)

    p = sub.add_parser("cancel", help="cancel a job")
    p.add_argument("job_id")
    _client_options(p)

    for name, text in (("theories", "installed theories and their spec schemas"), ("health", "server health")):
        p = sub.add_parser(name, help=text)
        _client_options(p)
    return top


# ---------------------------------------------------------------------------------------------
# reading requests, writing results
# ---------------------------------------------------------------------------------------------


class UsageError(Exception):
    pass


def _read_json(path: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None


def _request_parts(path: str, solver_path: str | None) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    """(model, solver, rest of the request) from a spec file holding a model or a whole request."""
    data = _read_json(path)
    if not isinstance(data, dict):
        raise UsageError(f"{path} must hold a JSON object")
    if "model" in data:
        model, solver, rest = data["model"], data.get("solver"), data
    else:
        model, solver, rest = data, None, {}
    if solver_path:
        solver = _read_json(solver_path)
    return model, solver, rest


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--values takes comma-separated numbers, not {text!r}") from None


def sweep_axes(args: argparse.Namespace, rest: dict[str, Any]) -> tuple[str | list[str], Any]:
    """Parameter(s) and value spec(s) from the flags (or, without flags, from the request file).

    Each ``--parameter`` takes the ``--values`` or the ``--start/--stop/--num`` that follow it, so one axis
    may be listed and the other ranged. With ``--method boundary`` only each range counts: ``--num`` may be
    left out."""
    axes = [dict(a) for a in getattr(args, "axes", [])]
    if not axes:
        if "parameter" not in rest or "values" not in rest:
            raise UsageError("give --parameter with --start/--stop/--num or --values")
        return rest["parameter"], rest["values"]
    if any("parameter" not in a for a in axes):
        raise UsageError("put --values or --start/--stop/--num after the --parameter they belong to")
    if len(axes) > 2:
        raise UsageError("at most two --parameter (a phase diagram)")
    specs: list[Any] = []
    for a in axes:
        name, ranged = a["parameter"], [k for k in ("start", "stop", "num") if k in a]
        if getattr(args, "method", None) == "boundary" and "values" not in a and "num" not in a:
            a["num"], ranged = 2, [*ranged, "num"]
        if "values" in a and ranged:
            raise UsageError(f"--parameter {name}: give --values or --start/--stop/--num, not both")
        if "values" in a and a.get("log"):
            raise UsageError(f"--parameter {name}: --log spaces a --start/--stop/--num range, not --values")
        if "values" in a:
            specs.append(_floats(a["values"]))
        elif len(ranged) == 3:
            specs.append({"start": a["start"], "stop": a["stop"], "num": a["num"],
                          **({"scale": "log"} if a.get("log") else {})})
        else:
            raise UsageError(f"--parameter {name}: give --values, or all of --start, --stop and --num")
    params = [a["parameter"] for a in axes]
    return (params[0], specs[0]) if len(axes) == 1 else (params, specs)


def check_output(path: str, flag: str = "-o") -> None:
    """A file this command can write: its folder exists, it is no folder itself, and it may be written. Checked
    before anything is submitted, so that a long job never ends on an unwritable path."""
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{flag} {path}: is a directory; give a file name")
    folder = target.parent
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: the directory {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"{flag} {path}: not writable")


#: Lines of the summary a job's result leaves on a terminal (a screen, with the prompt and the progress bar).
SCREEN_LINES = 20


def _to_file_by_default(args: argparse.Namespace) -> bool:
    """A JSON result that goes to a default file: on a terminal, without -o or --json."""
    return (hasattr(args, "json") and getattr(args, "format", "json") == "json" and not args.output
            and not args.json and sys.stdout.isatty())


def default_result_path(command: str, job_id: str) -> Path:
    safe = "".join(ch for ch in str(job_id) if ch.isalnum() or ch in "-_")[:16] or "result"
    return Path(f"{command}-{safe}.json")


def result_summary(result: dict[str, Any], limit: int = SCREEN_LINES) -> list[str]:
    """At most ``limit`` lines: what was computed and its transitions (or lines), the rest left to the file."""
    theory = result.get("theory", "?")
    axes = result.get("axes")
    if isinstance(axes, dict):
        over = " × ".join(f"{p} ({len(v)} values)" for p, v in axes.items())
        head = f"phase diagram of {theory} over {over}"
    elif "parameter" in result:
        head = f"sweep of {theory} over {result['parameter']}"
    else:
        head = f"{result.get('kind', 'result')} of {theory}"
    counts = [f"{len(result[k])} {k}" for k in ("points", "curves", "transitions", "lines") if
              isinstance(result.get(k), list)]
    if result.get("method") == "boundary":
        body = [line.removeprefix("# ") for line in _summary(result).splitlines() if line]
    else:
        body = []
        for tr in result.get("transitions") or []:
            at = "".join(f"{k} = {v:g}, " for k, v in (tr.get("at") or {}).items())
            name = tr.get("line_parameter") or result.get("parameter", "")
            body.append(f"{tr['kind']} at {at}{name} = {tr['parameter']:.10g} ({'/'.join(tr['branches'])})")
    lines = [head + (": " + ", ".join(counts) if counts else "")]
    room = limit - len(lines)
    if len(body) > room:
        body = [*body[: room - 1], f"… and {len(body) - room + 1} more in the file"]
    return lines + body


def _deliver(args: argparse.Namespace, command: str, job_id: str, result: Any) -> None:
    """The JSON result to -o, to stdout (--json, a pipe or a file), or to a default file with a summary."""
    if not _to_file_by_default(args):
        _emit(_dump(result), args.output)
        return
    path = default_result_path(command, job_id)
    text = _dump(result)
    path.write_text(text)
    summary = result_summary(result) if isinstance(result, dict) else []
    print("\n".join([*summary, f"result ({len(text.encode()) / 1e3:.0f} kB) written to {path}; "
                                f"--json prints it here, -o FILE writes it elsewhere"]))


def _emit(text: str, output: str | None) -> None:
    if output:
        Path(output).write_text(text)
    else:
        sys.stdout.write(text)


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=2) + "\n"


def _client(args: argparse.Namespace) -> Client:
    return Client(args.url, api_key=args.api_key, timeout=args.timeout)


def _netcdf_target(args: argparse.Namespace) -> str | None:
    """The file a ``--format netcdf`` run writes (checked before anything is submitted)."""
    if getattr(args, "format", None) != "netcdf":
        return None
    if not args.output:
        raise UsageError("--format netcdf writes a file: give -o FILE")
    try:
        import h5netcdf  # noqa: F401
        import h5py  # noqa: F401
        import xarray  # noqa: F401
    except ImportError:
        raise UsageError(install_hint("--format netcdf", "arrays")) from None
    return args.output


def _write_netcdf(c: Client, result: Any, path: str) -> None:
    from clients.arrays import to_netcdf

    to_netcdf(c.to_xarray(result), path)


def _summary(result: dict[str, Any]) -> str:
    if result.get("method") == "boundary":
        out = [f"# {ln['kind']} ({ln.get('type')}, {'/'.join(ln['branches'])}): {len(ln['points'])} points, ends "
               + ", ".join(f"{e['kind']} at ({e['point'][0]:.8g}, {e['point'][1]:.8g})" for e in ln["ends"])
               for ln in result.get("lines", [])]
        out += [f"# critical point at ({c['point'][0]:.8g}, {c['point'][1]:.8g})"
                for c in result.get("critical_points", [])]
        if result.get("reason"):
            out.append(f"# {'' if result.get('lines') else 'no lines: '}{result['reason']}")
        out += [f"# warning: {w}" for w in result.get("warnings", [])]
        out += [f"# phase {p['phase']} at ({p['point'][0]:.8g}, {p['point'][1]:.8g})"
                for p in result.get("regions", [])]
        return "\n".join(out)
    lines = []
    for tr in result.get("transitions", []):
        at = "".join(f"{k} = {v:g}, " for k, v in (tr.get("at") or {}).items())
        lines.append(f"# {tr['kind']} at {at}{tr['parameter']:.10g} ({'/'.join(tr['branches'])})")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from service.__main__ import uvicorn_options
    from service.settings import get_settings

    # The same options as `python -m service`: proxy headers only from SADDLELAB_TRUSTED_PROXIES.
    options = uvicorn_options(get_settings())
    options.update(host=args.host or options["host"], port=args.port or options["port"], workers=args.workers)
    uvicorn.run("service.app:app", **options)  # type: ignore[arg-type]
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from service import worker

    argv = [*(["--url", args.url] if args.url else []), *(["--name", args.name] if args.name else []),
            *(["--burst"] if args.burst else [])]
    return worker.main(argv)


def cmd_solve(args: argparse.Namespace) -> int:
    model, solver, _ = _request_parts(args.spec, args.solver)
    netcdf = _netcdf_target(args)
    with _client(args) as c:
        result = c.solve(model, solver)
        if netcdf:
            _write_netcdf(c, result, netcdf)
        else:
            _emit(_dump(result), args.output)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    model, solver, rest = _request_parts(args.spec, args.solver)
    parameter, values = sweep_axes(args, rest)
    method = args.method or rest.get("method") or "continuation"
    lines = _read_json(args.lines) if args.lines else rest.get("lines")
    netcdf = _netcdf_target(args)
    with _client(args) as c:
        accepted = c.submit_sweep(model, parameter, values, method=method, solver=solver, lines=lines)
        if args.detach:
            _emit(_dump(accepted), args.output)
            return 0
        try:
            result = c.wait(accepted["job_id"], progress=not args.no_progress)
        except KeyboardInterrupt:
            print(f"\ninterrupted; the job goes on: saddlelab job {accepted['job_id']} "
                  f"(or saddlelab cancel {accepted['job_id']})", file=sys.stderr)
            return 130
        if netcdf:
            _write_netcdf(c, result, netcdf)
    if netcdf:
        summary = _summary(result)
        if summary:
            print(summary, file=sys.stderr)
    elif args.format == "csv":
        _emit(to_csv(result, args.branch), args.output)
        summary = _summary(result)
        if summary:
            print(summary, file=sys.stderr)
    else:
        _deliver(args, "sweep", accepted["job_id"], result)
    return 0


def _inline_or_file(text: str) -> Any:
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--sizes is not valid JSON: {exc}") from None
    return _read_json(text)


def experiment_request(args: argparse.Namespace) -> dict[str, Any]:
    """The request body from the spec file and the flags (flags win over the file's sampler options)."""
    model, solver, rest = _request_parts(args.spec, None)
    sampler = dict(rest.get("sampler") or {})
    if args.sampler:
        sampler.update(_read_json(args.sampler))
    for name in ("method", "chains", "warmup", "draws", "thin", "seed", "init"):
        if getattr(args, name) is not None:
            sampler[name] = getattr(args, name)
    body: dict[str, Any] = {"model": model, "sampler": sampler}
    sizes = _inline_or_file(args.sizes) if args.sizes else rest.get("sizes")
    if sizes is not None:
        body["sizes"] = sizes
    if solver is not None:
        body["solver"] = solver
    seed = args.network_seed if args.network_seed is not None else rest.get("network_seed")
    if seed is not None:
        body["network_seed"] = seed
    if args.axes or "parameter" in rest:
        parameter, values = sweep_axes(args, rest)
        if not isinstance(parameter, str):
            raise UsageError("an experiment takes one --parameter (a learning curve)")
        body["parameter"], body["values"] = parameter, values
    return body


def cmd_experiment(args: argparse.Namespace) -> int:
    body = experiment_request(args)
    netcdf = _netcdf_target(args)
    with _client(args) as c:
        accepted = c.submit_experiment(body["model"], body["sampler"], sizes=body.get("sizes"),
                                       parameter=body.get("parameter"), values=body.get("values"),
                                       network_seed=body.get("network_seed", 0), solver=body.get("solver"))
        if args.detach:
            _emit(_dump(accepted), args.output)
            return 0
        try:
            result = c.wait(accepted["job_id"], progress=not args.no_progress, status=c.experiment_status,
                            unit="draw")
        except KeyboardInterrupt:
            print(f"\ninterrupted; the experiment goes on: GET /v1/experiments/{accepted['job_id']}", file=sys.stderr)
            return 130
        if netcdf:
            _write_netcdf(c, c.experiment_result(accepted["job_id"], result, body), netcdf)
            return 0
    if args.format == "csv":
        _emit(experiment_csv(result), args.output)
    else:
        _deliver(args, "experiment", accepted["job_id"], result)
    return 0


def cmd_job(args: argparse.Namespace) -> int:
    with _client(args) as c:
        _deliver(args, "job", args.job_id, c.job(args.job_id, detail=args.detail))
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    with _client(args) as c:
        status = c.cancel(args.job_id)
    print(f"job {args.job_id}: {status['status']}")
    return 0


def cmd_theories(args: argparse.Namespace) -> int:
    with _client(args) as c:
        for t in c.theories():
            print(f"{t['name']}: {t['summary']}\n  sweepable: {', '.join(t.get('sweepable', []))}")
    return 0


def cmd_health(args: argparse.Namespace) -> int:
    with _client(args) as c:
        print(_dump(c.health()), end="")
    return 0


COMMANDS = {
    "serve": cmd_serve,
    "worker": cmd_worker,
    "solve": cmd_solve,
    "sweep": cmd_sweep,
    "experiment": cmd_experiment,
    "job": cmd_job,
    "cancel": cmd_cancel,
    "theories": cmd_theories,
    "health": cmd_health,
}


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        # Every file a command writes is checked before anything is submitted.
        if getattr(args, "output", None):
            check_output(args.output)
        elif _to_file_by_default(args) and not getattr(args, "detach", False):
            check_output(str(default_result_path(args.command, "x")), "the default result file")
        return COMMANDS[args.command](args)
    except UsageError as exc:
        p.error(str(exc))  # exits with status 2
    except SaddleLabError as exc:
        print(f"saddlelab: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
