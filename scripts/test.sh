#!/usr/bin/env bash
# Run the whole test suite. Installs what it needs: the test extras, and redis-server and chromium
# (the offline API-docs test renders /docs in it) from Debian's packages when they are missing and
# we may install (root). Fails when no test ran.
#
# The tests run in SADDLELAB_TEST_PROCESSES processes side by side (pytest-xdist; default 2, the cores of the CI
# machine), a whole test file to one process, so that a module's fixtures are built once; the costliest files
# first (tests/file_order.py), so that neither process idles at the end. Arguments go to
# pytest: `./scripts/test.sh tests/service -x`, or `-n 0` for a single process.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh test,arrays,plot
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing ${missing[*]} from Debian's packages"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null
    else
        echo "warning: ${missing[*]} not found and cannot be installed here; the tests that need them fail or skip" >&2
    fi
fi
.venv/bin/ruff check --no-cache solvers service clients tests benchmarks
# One BLAS/OpenMP thread per test process (the processes already fill the cores): OpenBLAS's idle threads spin
# between calls and take the core from the other process's work. Workers and servers the tests start inherit it.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" \
    MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
set +e
.venv/bin/python -m pytest -n "${SADDLELAB_TEST_PROCESSES:-2}" --dist loadfile --no-loadscope-reorder --durations=20 "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: failing the run" >&2
    exit 1
fi
exit "$status"
