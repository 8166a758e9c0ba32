# SaddleLab: one image for the API (uvicorn) and the RQ workers (python -m service.worker).
#
# Layers, from the one that changes least:
#   1. the base image, the user, the JAX cache directory;
#   2. the dependencies, at the exact versions of requirements.lock (scripts/lock.sh writes it from
#      pyproject.toml): rebuilt only when the lock file changes;
#   3. the code (solvers/, service/, clients/): a code edit rebuilds this layer alone, in seconds.
# The code is not pip-installed: it lives once, in /app, on PYTHONPATH (no copy in site-packages, no build/
# or *.egg-info left behind).
FROM python:3.11.9-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    SADDLELAB_JAX_CACHE_DIR=/var/cache/saddlelab/jax

# The JAX compilation cache directory exists in the image, owned by the user, so that the named volume
# docker-compose.yml mounts there starts with that owner.
RUN useradd --create-home --uid 10001 saddlelab \
    && mkdir -p /var/cache/saddlelab/jax \
    && chown -R saddlelab /var/cache/saddlelab

WORKDIR /app

COPY requirements.lock ./
RUN pip install --no-deps -r requirements.lock && pip check

USER saddlelab
EXPOSE 8000
# The API by default; docker-compose.yml runs the workers from the same image.
CMD ["uvicorn", "service.app:app", "--host", "0.0.0.0", "--port", "8000"]

# Last, the code (owned by root: the service cannot change it).
COPY solvers ./solvers
COPY service ./service
COPY clients ./clients
