"""The check that every field of a result's JSON is declared by its model finds a nested undeclared key, and leaves
alone the fields a theory may add (its notes' fields and diagnostics)."""

from __future__ import annotations

from service.result_schemas import SweepResult
from tests.contract.declared_fields import undeclared


def test_an_undeclared_nested_field_is_found_and_a_theorys_own_fields_are_not() -> None:
    end = {"branch": "a", "kind": "fold", "parameter": 1.0, "partner": "b", "detail": "", "bogus": 1}
    curve = {"name": "a", "branches": ["a"], "traced": 1, "ends": [end], "branch": ["a"], "parameter": [1.0],
             "arclength": [0.0], "stable": [True], "free_entropy": [None], "order_parameters": {}, "observables": {},
             "special": [{"index": 0, "kind": "spinodal", "type": "fold", "parameter": 1.0, "branches": ["a"],
                          "extra": 2}]}
    result = {"theory": "t", "parameter": "u", "method": "continuation", "transitions": [],
              "diagnostics": {"seconds": 1.0, "theory_note": "x"}, "sample_complexity": {}, "points": [],
              "curves": [curve]}
    assert SweepResult.model_validate(result)  # the models admit them all
    assert undeclared(SweepResult, result) == [".curves[0].ends[0].bogus", ".curves[0].special[0].extra"]
