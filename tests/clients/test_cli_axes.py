"""Each ``--parameter`` of ``saddlelab sweep`` takes the ``--values`` or ``--start/--stop/--num`` after it."""

from __future__ import annotations

import pytest

from service import cli


def axes(line: str) -> tuple[object, object]:
    return cli.sweep_axes(cli.parser().parse_args(line.split()), {})


def test_one_axis_listed_and_the_other_ranged() -> None:
    # the README's phase-diagram line, which failed with "give one --values per --parameter"
    assert axes("sweep s.json --parameter b --values 0.25,0.3 --parameter u --start 20 --stop 40 --num 81") == (
        ["b", "u"], [[0.25, 0.3], {"start": 20.0, "stop": 40.0, "num": 81}])
    assert axes("sweep s.json --parameter b --start 0.25 --stop 0.3 --num 2 --parameter u --values 20,40") == (
        ["b", "u"], [{"start": 0.25, "stop": 0.3, "num": 2}, [20.0, 40.0]])
    assert axes("sweep s.json --method boundary --parameter b --start 0.25 --stop 0.4 --parameter u --start 10 "
                "--stop 60") == (["b", "u"], [{"start": 0.25, "stop": 0.4, "num": 2}, {"start": 10.0, "stop": 60.0,
                                                                                       "num": 2}])


@pytest.mark.parametrize(("line", "says"), [
    ("sweep s.json --parameter b --values 0.25 --start 1 --parameter u --values 20", "not both"),
    ("sweep s.json --values 1,2 --parameter u", "after the --parameter"),
    ("sweep s.json --parameter u --start 20 --stop 40", "all of --start, --stop and --num"),
    ("sweep s.json --parameter a --values 1 --parameter b --values 1 --parameter c --values 1", "at most two"),
])
def test_bad_axes_say_what_is_wrong(line: str, says: str) -> None:
    with pytest.raises(cli.UsageError, match=says):
        axes(line)
