"""Pieces shared by every mode of ``rubin_cavity``: the overlap potential and its law, the closure, phases."""
