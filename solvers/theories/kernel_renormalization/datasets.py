"""Turn a validated data spec into arrays (X, y, X_test, y_test) with a content hash.

The hash keys the spectrum cache, so two specs that describe the same arrays share one
eigendecomposition whatever their kind.

Generated data (a teacher at large N0, the digits split) are remembered across requests in a memo
bounded in bytes (:data:`DATA_MEMO_BYTES` in all; a dataset larger than that is rebuilt when asked
for again rather than kept). Its key is the canonical content of the data spec (its JSON: kind,
sizes, seed, rule), so two different specs never share an entry.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from scipy.special import erf

from solvers.theories.kernel_renormalization.digits import digits
from solvers.theories.kernel_renormalization.lru import BytesLRU
from solvers.theories.kernel_renormalization.spec import ArraysData, DigitsData, TeacherData

#: Total bytes of data arrays remembered across requests.
DATA_MEMO_BYTES = 256 * 2**20
#: Most datasets remembered (whatever their size).
DATA_MEMO_ENTRIES = 16


@dataclass(frozen=True)
class Dataset:
    X: np.ndarray  # (P, N0)
    y: np.ndarray  # (P,)
    X_test: np.ndarray  # (P_test, N0)
    y_test: np.ndarray  # (P_test,)
    digest: str

    @property
    def P(self) -> int:
        return int(self.X.shape[0])

    @property
    def N0(self) -> int:
        return int(self.X.shape[1])

    @property
    def nbytes(self) -> int:
        return int(self.X.nbytes + self.y.nbytes + self.X_test.nbytes + self.y_test.nbytes)


def make_dataset(X: np.ndarray, y: np.ndarray, X_test: np.ndarray, y_test: np.ndarray) -> Dataset:
    arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in (X, y, X_test, y_test)]
    h = hashlib.sha256()
    for a in arrays:
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    for a in arrays:
        a.setflags(write=False)
    return Dataset(*arrays, digest=h.hexdigest())


# ---- generators -----------------------------------------------------------------------------
def teacher_dataset(spec: TeacherData) -> Dataset:
    """x ~ N(0, I), t ~ N(0, I) from independent child streams of ``seed``; z = t·x/√N0."""
    inputs_seq, teacher_seq = np.random.SeedSequence(spec.seed).spawn(2)
    X_all = np.random.default_rng(inputs_seq).standard_normal((spec.P + spec.P_test, spec.N0))
    t = np.random.default_rng(teacher_seq).standard_normal(spec.N0)
    z = X_all @ t / np.sqrt(spec.N0)
    if spec.teacher == "linear_sign":
        y_all = np.where(z >= 0, 1.0, -1.0)
    elif spec.teacher == "linear":
        y_all = z
    else:
        y_all = erf(z)
    return make_dataset(X_all[: spec.P], y_all[: spec.P], X_all[spec.P :], y_all[spec.P :])


def digits_dataset(spec: DigitsData) -> Dataset:
    """Two digit classes, ±1 labels, a seeded disjoint split, pixels standardised on the training set.

    Pixels (0…16) are divided by 16, then each pixel is centred and scaled by its training-set mean and
    standard deviation (pixels constant on the training set become 0), so C_μμ = ‖x_μ‖²/(λ0 N0) = O(1).
    """
    data, target = digits()
    a, b = spec.classes
    idx = np.flatnonzero(np.isin(target, [a, b]))
    idx = idx[np.random.default_rng(spec.seed).permutation(idx.size)]
    train, test = idx[: spec.P], idx[spec.P : spec.P + spec.P_test]
    X, X_test = data[train] / 16.0, data[test] / 16.0
    mean, std = X.mean(axis=0), X.std(axis=0)
    scale = np.where(std > 0, std, np.inf)
    X, X_test = (X - mean) / scale, (X_test - mean) / scale
    y = np.where(target[train] == a, 1.0, -1.0)
    y_test = np.where(target[test] == a, 1.0, -1.0)
    return make_dataset(X, y, X_test, y_test)


def arrays_dataset(spec: ArraysData) -> Dataset:
    return make_dataset(np.asarray(spec.X), np.asarray(spec.y), np.asarray(spec.X_test), np.asarray(spec.y_test))


# ---- memo ----------------------------------------------------------------------------------
_MEMO: BytesLRU[Dataset] = BytesLRU(DATA_MEMO_BYTES, DATA_MEMO_ENTRIES, lambda ds: ds.nbytes)


def data_key(spec: TeacherData | DigitsData) -> tuple[str, str]:
    """The memo key of generated data: the kind and the spec's canonical JSON (every field that shapes the arrays)."""
    return (spec.kind, spec.model_dump_json())


def materialize(spec: ArraysData | TeacherData | DigitsData) -> Dataset:
    """The arrays of a data spec; generated data come from the memo when the same content was built before.

    Inline arrays are not memoised: hashing them (the key they would need) costs as much as building them.
    """
    if isinstance(spec, ArraysData):
        return arrays_dataset(spec)
    key = data_key(spec)
    hit = _MEMO.get(key)
    if hit is not None:
        return hit
    if isinstance(spec, TeacherData):
        ds = teacher_dataset(spec)
    elif isinstance(spec, DigitsData):
        ds = digits_dataset(spec)
    else:  # pragma: no cover - the spec union is closed
        raise TypeError(f"unknown data spec {type(spec).__name__}")
    _MEMO.put(key, ds)
    return ds


def clear_memo() -> None:
    _MEMO.clear()
