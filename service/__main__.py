"""``python -m service``: serve ``service.app:app`` with uvicorn."""

from __future__ import annotations

import uvicorn

from service.settings import get_settings


def main() -> None:
    s = get_settings()
    uvicorn.run("service.app:app", host=s.host, port=s.port, log_level="info")


if __name__ == "__main__":
    main()
