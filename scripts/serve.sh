#!/usr/bin/env bash
# Serve SaddleLab on port 8000 with the embedded defaults (in-process cache and executor, no Redis), installed with
# the arrays (xarray, netCDF) and plot (matplotlib) extras that the README and the notebooks use.
# Another port: PORT=8001 (or SADDLELAB_PORT=8001), e.g. `make serve PORT=8001`; PORT wins when both are set.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh client,arrays,plot
if [ -n "${PORT:-}" ]; then
    export SADDLELAB_PORT="$PORT"
fi
exec .venv/bin/python -m service
