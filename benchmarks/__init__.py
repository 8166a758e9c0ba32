"""Benchmarks: scripts that print performance ratios measured in one run (``python -m benchmarks``)."""
