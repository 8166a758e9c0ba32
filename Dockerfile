# SaddleLab: one image for the API (uvicorn) and the RQ workers (python -m service.worker).
FROM python:3.11.9-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies first (cached while only the code changes), then the packages themselves.
COPY pyproject.toml README.md ./
COPY solvers ./solvers
COPY service ./service
COPY clients ./clients
RUN pip install ".[client]"

RUN useradd --create-home --uid 10001 saddlelab
USER saddlelab

EXPOSE 8000
# The API by default; docker-compose.yml runs the workers from the same image.
CMD ["uvicorn", "service.app:app", "--host", "0.0.0.0", "--port", "8000"]
