"""``python -m service``: serve ``service.app:app`` with uvicorn.

Proxy headers (X-Forwarded-For / -Proto) are honoured only from the addresses in
``SADDLELAB_TRUSTED_PROXIES`` (default: none), so a client cannot choose the address that its
rate limit and failed-authentication count are kept under.
"""

from __future__ import annotations

import uvicorn

from service.settings import Settings, get_settings


def uvicorn_options(s: Settings) -> dict[str, object]:
    trusted = list(s.trusted_proxies)
    return {
        "host": s.host,
        "port": s.port,
        "workers": max(1, s.api_workers),
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": ",".join(trusted) if trusted else "",
        "log_level": "info",
    }


def main() -> None:
    uvicorn.run("service.app:app", **uvicorn_options(get_settings()))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
