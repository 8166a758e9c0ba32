# The two commands of the README. Both do their own set-up on a fresh machine.
.PHONY: serve test bench

serve:  ## Serve on port 8000 with the embedded defaults (no Redis needed); another port: make serve PORT=8001
	./scripts/serve.sh

test:  ## Run the whole test suite (starts a real redis-server where tests need it)
	./scripts/test.sh

bench:  ## Print every performance ratio of the project in one run
	./scripts/setup.sh bench && .venv/bin/python -m benchmarks
