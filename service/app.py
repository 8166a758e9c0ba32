"""The SaddleLab ASGI app: ``service.app:app``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException

from service.errors import render_errors
from service.heap import keep_heap
from service.middleware import ApiKeys, BodyLimit
from service.openapi import unique_operation_ids
from service.provenance import SourceChanged
from service.ratelimit import RateCounter, RateLimit
from service.routers import experiments, health, jobs, solve, theories
from service.settings import Settings, get_settings
from service.state import AppState
from solvers import SOLVER_VERSION

log = logging.getLogger("saddlelab.api")

DESCRIPTION = """
SaddleLab solves the order-parameter equations of statistical-mechanics theories of feature
learning in Bayesian neural networks: every branch, the equilibrium by free entropy, spinodals
and first-order transitions along sweeps, with honest diagnostics. Solves are cached by the
canonical hash of their spec; sweeps and phase diagrams run as jobs. Experiments sample the finite
network a theory describes (BlackJAX), chain by chain on the workers, beside the theory's solve.
"""


#: Where the documentation pages' JavaScript, CSS and icon are served (open like the pages themselves).
DOCS_ASSETS = "/docs/assets"
#: Swagger UI shows each request body as its schema with the field descriptions (the papers' symbols) unfolded,
#: not as an example value. The schema list itself stays folded (one click opens a schema): unfolded three levels
#: deep, its 67 schemas made a 0.95 MB page that took Chromium tens of seconds to render.
SWAGGER_UI_PARAMETERS = {"defaultModelRendering": "model", "defaultModelExpandDepth": 3,
                         "defaultModelsExpandDepth": 1}


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        keep_heap()  # the API process builds megabyte responses again and again (service/heap.py)
        yield
        app.state.saddlelab.close()

    # /docs and /redoc load Swagger UI and Redoc from this instance (fastapi-offline ships them), not from a CDN:
    # a lab network without internet sees them too.
    app = FastAPIOffline(title="SaddleLab", version=SOLVER_VERSION, description=DESCRIPTION, lifespan=lifespan,
                         static_url=DOCS_ASSETS, swagger_ui_parameters=SWAGGER_UI_PARAMETERS)
    app.state.saddlelab = AppState.build(settings)
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # The offending input is echoed back bounded (deep, huge or non-Unicode input must not make the
        # 422 itself fail), and JSON cannot carry NaN/Infinity: those become null.
        route = request.scope.get("route")
        body = getattr(getattr(route, "body_field", None), "field_info", None)
        return JSONResponse(status_code=422, content={"detail": render_errors(
            exc.errors(), body_type=getattr(body, "annotation", None))})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # A body that is not even text (e.g. invalid UTF-8) is malformed input like bad JSON: a 422.
        if exc.status_code == 400:
            detail = [{"type": "json_invalid", "loc": ["body"], "msg": f"malformed request body: {exc.detail}",
                       "input": None}]
            return JSONResponse(status_code=422, content={"detail": detail})
        return JSONResponse(status_code=exc.status_code, content={"detail": exc.detail},
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(SourceChanged)
    async def stale(request: Request, exc: SourceChanged) -> JSONResponse:
        log.error("%s", exc)
        return JSONResponse(status_code=503, content={"detail": str(exc)})

    for router in (health.router, theories.router, solve.router, jobs.router, experiments.router):
        app.include_router(router)
    app.openapi = lambda: unique_operation_ids(app)  # type: ignore[method-assign]
    # Starlette runs the last-added middleware first: body limit, then keys, then the rate limit.
    state = app.state.saddlelab
    app.add_middleware(RateLimit, counter=RateCounter(settings.rate_limit_per_minute, state.link, state.secret))
    failures = RateCounter(settings.auth_failures_per_minute, state.link, state.secret, kind="authfail")
    app.add_middleware(ApiKeys, keys=settings.api_keys, failures=failures)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    return app


logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
app = create_app()
