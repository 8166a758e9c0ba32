#!/usr/bin/env bash
# Run the whole test suite. Installs what it needs: the test extras, and redis-server from
# Debian's packages when it is missing and we may install (root). Fails when no test ran.
#
# The tests run in SADDLELAB_TEST_PROCESSES processes side by side (pytest-xdist; default 2, the cores of the CI
# machine), a whole test file to one process, so that a module's fixtures are built once. Arguments go to
# pytest: `./scripts/test.sh tests/service -x`, or `-n 0` for a single process.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh test
if ! command -v redis-server >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing redis-server from Debian's packages"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null
    else
        echo "warning: redis-server not found and cannot be installed here; Redis tests will fail" >&2
    fi
fi
.venv/bin/ruff check --no-cache solvers service clients tests benchmarks
set +e
.venv/bin/python -m pytest -n "${SADDLELAB_TEST_PROCESSES:-2}" --dist loadfile --durations=20 "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: failing the run" >&2
    exit 1
fi
exit "$status"
