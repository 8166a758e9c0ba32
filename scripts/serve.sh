#!/usr/bin/env bash
# Serve SaddleLab on port 8000 with the embedded defaults (in-process cache and executor, no Redis).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh client
exec .venv/bin/python -m service
