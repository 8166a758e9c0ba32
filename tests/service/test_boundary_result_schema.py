"""A boundary job's result with unexplained crossings, scans that failed and an integer field continued as a real is
what the response model (``service.result_schemas.BoundaryJobResult``) describes: the jobs route validates against
it, so a mismatch would be a 500."""

from __future__ import annotations

import numpy as np

from service.result_schemas import BoundaryJobResult
from service.serialize import boundary_json
from solvers.core.curve import Curve, CurvePoint, End
from solvers.core.lines.results import BoundaryResult, Unexplained
from solvers.core.special_points import SpecialKind
from tests.contract.declared_fields import undeclared


def test_unexplained_crossings_are_served_as_the_response_model_says() -> None:
    x = np.zeros(1)
    line = Curve("", (CurvePoint((0.1, 10.0), x), CurvePoint((0.2, 12.0), x)), (),
                 (End("domain", (0.1, 10.0), x), End("lost", (0.2, 12.0), x, "the corrector fails")),
                 parameters=("kappa", "N"), kind=SpecialKind.FOLD, branches=("a", "b"))
    result = BoundaryResult(
        (line,), (), "", (0.1, 0.5), (10.0, 20.0),
        (Unexplained(SpecialKind.BIFURCATION, (0.3, 15.0), ("c",), "N = 20 (edge)", "could not be traced (nan)"),
         Unexplained(SpecialKind.FIRST_ORDER, (0.4, 11.0), ("a", "c"), "kappa = 0.4", "no line")),
        ("the scan at N = 10 (edge) failed (SVD did not converge)",))
    served = boundary_json("mean_field_ard", ("kappa", "N"), ((0.1, 0.5), (10.0, 20.0)), result, 1.0, [], ("N",))
    model = BoundaryJobResult.model_validate(served)
    assert undeclared(BoundaryJobResult, served) == []  # and it describes every field the codec writes
    assert [(u.kind, u.point, u.scan) for u in model.unexplained] == [
        ("stability_loss", [0.3, 15.0], "N = 20 (edge)"), ("first_order", [0.4, 11.0], "kappa = 0.4")]
    assert served["unexplained"][0]["type"] == "bifurcation" and served["unexplained"][1]["branches"] == ["a", "c"]
    assert model.warnings == ["the scan at N = 10 (edge) failed (SVD did not converge)"]
    assert model.continued_as_real == ["N"]
    assert served["diagnostics"]["scans"] == {"kappa": [0.1, 0.5], "N": [10.0, 20.0]}
