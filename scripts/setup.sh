#!/usr/bin/env bash
# Create .venv and install SaddleLab with the given extras (default: none). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
STAMP=".venv/.installed${EXTRAS:+-$EXTRAS}"
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".${EXTRAS:+[$EXTRAS]}"
    touch "$STAMP"
fi
