"""Thin Python client of a SaddleLab server (HTTP only; needs httpx, optionally tqdm and matplotlib).

    from clients import Client
    lab = Client("http://lab-server:8000", api_key="...")
    result = lab.sweep({"theory": "rubin_cavity", "mode": "potential"}, "u", {"start": 20, "stop": 40, "num": 41})
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
from clients.tables import rows, series, to_csv

__all__ = [
    "Client",
    "ConnectionFailed",
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
    "rows",
    "series",
    "to_csv",
    "values_spec",
]
