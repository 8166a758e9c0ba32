"""Thin Python client of a SaddleLab server (HTTP only: needs httpx; optional extras: ``arrays`` for xarray,
netCDF and ArviZ output, ``plot`` for matplotlib, ``progress`` for tqdm).

    from clients import Client
    lab = Client("http://lab-server:8000", api_key="...")
    result = lab.sweep({"theory": "rubin_cavity", "mode": "potential"}, "u", {"start": 20, "stop": 40, "num": 41})
    series(result, "rho_star")                     # any quantity by its dotted name: "class_distance.D2"
    tree = lab.to_xarray(result)                   # labelled arrays, with the papers' symbols as attributes
    run = lab.experiment(spec, sampler={"chains": 4, "draws": 2000}, sizes={"d": 64})   # the finite network
    run.to_datatree()                              # ArviZ DataTree: posterior, sample_stats, theory, summary
"""

from clients.client import Client, values_spec
from clients.errors import (
    ConnectionFailed,
    InvalidRequest,
    JobCancelled,
    JobFailed,
    JobTimeout,
    NotFound,
    PayloadTooLarge,
    SaddleLabError,
    ServerError,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
)
from clients.experiments import ExperimentResult, inference_data, points_of, to_datatree
from clients.names import UnknownQuantity
from clients.result import Result, as_result
from clients.tables import experiment_csv, experiment_rows, quantity_names, read_csv, rows, series, to_csv

__all__ = [
    "Client",
    "ConnectionFailed",
    "ExperimentResult",
    "InvalidRequest",
    "JobCancelled",
    "JobFailed",
    "JobTimeout",
    "NotFound",
    "PayloadTooLarge",
    "Result",
    "SaddleLabError",
    "ServerError",
    "ServiceUnavailable",
    "TooManyRequests",
    "Unauthorized",
    "UnknownQuantity",
    "as_result",
    "experiment_csv",
    "experiment_rows",
    "inference_data",
    "points_of",
    "quantity_names",
    "read_csv",
    "rows",
    "series",
    "to_csv",
    "to_datatree",
    "values_spec",
]
