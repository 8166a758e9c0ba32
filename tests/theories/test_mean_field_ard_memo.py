"""The cross-request memo: least recently used entries leave first, by count and by bytes."""

from __future__ import annotations

from solvers.theories.mean_field_ard.memo import Memo


def test_memo_is_bounded_by_entries_and_bytes() -> None:
    made: list[str] = []

    def make(k: str) -> str:
        made.append(k)
        return k * 10

    m: Memo[str] = Memo(3, max_bytes=25, weight=lambda key, v: len(v))
    assert m.get_or_make("a", lambda: make("a")) == "aaaaaaaaaa"
    m.get_or_make("b", lambda: make("b"))
    m.get_or_make("a", lambda: make("a"))  # a hit: "a" becomes the most recent
    m.get_or_make("c", lambda: make("c"))  # 30 bytes > 25: "b", the least recent, leaves
    m.get_or_make("a", lambda: make("a"))
    m.get_or_make("b", lambda: make("b"))
    assert made == ["a", "b", "c", "b"]
    big: Memo[str] = Memo(3, max_bytes=5, weight=lambda key, v: len(v))
    big.get_or_make("x", lambda: make("x"))
    big.get_or_make("x", lambda: make("x"))  # larger than the bound: never kept
    assert made[-2:] == ["x", "x"]
    count: Memo[int] = Memo(2)
    for k in (1, 2, 3, 1):
        count.get_or_make(k, lambda k=k: made.append(str(k)) or k)
    assert made[-4:] == ["1", "2", "3", "1"]


def test_importing_the_theory_leaves_jax_uninitialised() -> None:
    """The service's fork server imports every theory and then forks solve processes; a JAX backend started
    before the fork deadlocks the children, so the import must not start one (BlackJAX's import would)."""
    import subprocess
    import sys

    code = ("import jax._src.xla_bridge as xb, solvers.theories.mean_field_ard; "
            "raise SystemExit(1 if xb._backends else 0)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
