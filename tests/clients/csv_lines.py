"""Reading a CSV export with the standard library: its opening comment lines (units, symbols) are not data."""

from __future__ import annotations


def data_lines(text: str) -> list[str]:
    """The lines of a CSV export after its comment lines: the header, then the rows."""
    return [line for line in text.splitlines() if not line.startswith("#")]
