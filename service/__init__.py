"""SaddleLab HTTP service (FastAPI), its cache and its job queue."""
