"""Thin Python client of a SaddleLab server (HTTP only; needs httpx, optionally tqdm and matplotlib).

    from clients import Client
    lab = Client("http://lab-server:8000", api_key="...")
    result = lab.sweep({"theory": "rubin_cavity", "mode": "potential"}, "u", {"start": 20, "stop": 40, "num": 41})
    run = lab.experiment(spec, sampler={"chains": 4, "draws": 2000}, sizes={"d": 64})   # the finite network
    run.to_inference_data()                                                            # ArviZ
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
from clients.experiments import ExperimentResult, inference_data, points_of
from clients.tables import experiment_csv, experiment_rows, rows, series, to_csv

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
    "SaddleLabError",
    "ServerError",
    "ServiceUnavailable",
    "TooManyRequests",
    "Unauthorized",
    "experiment_csv",
    "experiment_rows",
    "inference_data",
    "points_of",
    "rows",
    "series",
    "to_csv",
    "values_spec",
]
