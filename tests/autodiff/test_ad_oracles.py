"""Replay of the tensor-ad-oracles database: castwise's JVP and VJP against PyTorch's.

The tensor-ad-oracles database (``git clone https://github.com/shinaoka/tensor-ad-oracles``)
publishes, per op, JSON cases generated from PyTorch's own AD test inputs: the inputs,
an *observable* (the raw outputs, or a gauge-invariant view of them such as ``|U|``),
and probes, each a tangent *direction* and an output *cotangent* with PyTorch's JVP and
VJP (``pytorch_ref``) and a central finite difference (``fd_ref``).

Set ``CASTWISE_AD_ORACLES`` to the database's root (the directory holding ``cases/``)
and every case becomes one test row named by its ``case_id``::

    CASTWISE_AD_ORACLES=/path/to/tensor-ad-oracles python -m pytest tests/autodiff/test_ad_oracles.py -rs

Without it (CI, which cannot download anything) the replay skips with that reason;
only the checks of the decoder and of the mapping table below run.

How a case runs: the inputs are decoded (row-major data, complex numbers as
``[re, im]`` pairs), the PyTorch op is rebuilt from castwise's public functions
(table below, with the case's ``op_args`` / ``op_kwargs``), the observable is applied
exactly as the database defines it, and ``autodiff.jvp`` (along the probe's direction)
and ``autodiff.vjp`` (of the probe's cotangent) are compared with ``pytorch_ref`` under
the case's ``comparison`` tolerances (``|got - want| <= atol + rtol * |want|``), dtypes
included. castwise's VJP follows PyTorch's convention for complex numbers, so the
references compare as they are. A probe without ``pytorch_ref`` is checked against
``fd_ref``: the JVP directly, the VJP through the adjoint identity
``<cotangent, J v> == <J* cotangent, v>``. An ``error`` case (``expected_behavior``) must
make castwise raise; where castwise, like JAX, computes a value instead, the row
skips and says so.

Op mapping (PyTorch op -> castwise):

============================  ====================================================================
PyTorch op                    castwise
============================  ====================================================================
abs, exp                      ``rt.abs``, ``rt.exp``
where                         ``rt.where(condition, x, y)`` (condition from ``op_kwargs``)
clamp                         ``rt.lax.clamp(lo, x, hi)`` with the three broadcast first
cat                           ``rt.lax.concatenate``
narrow                        ``rt.lax.slice`` on ``dim``
solve                         ``rt.lax.solve``; a ``b`` of shape ``a.shape[:-1]`` is a (batch of)
                              vector(s), as in ``torch.linalg.solve``
solve_triangular              ``rt.lax.triangular_solve(left_side=left, lower=not upper,
                              unit_diagonal=unitriangular)``
lu_factor                     ``rt.lax.lu``'s packed factors (PyTorch's 1-based pivots are integer
                              outputs: not differentiated, not compared)
lu                            ``P, L, U`` from ``rt.lax.lu``: ``L``/``U`` masked from the packed factors
lu_solve                      ``lu_solve(LU, pivots, b, left, adjoint)``: the input ``a`` is
                              ``lu_factor``'s packed ``LU``, solved with ``rt.lax.triangular_solve``
                              (transposed and conjugated for ``adjoint``, right-sided for
                              ``left=False``); skipped when the record lacks the pivots
cholesky                      ``rt.lax.cholesky`` (``upper``: its conjugate transpose)
qr                            ``rt.lax.qr(full_matrices=mode == "complete")``
svd, svdvals                  ``rt.lax.svd(full_matrices=False)`` (the observables take the first
                              ``k`` columns anyway)
eigh                          ``rt.lax.eigh(lower=UPLO == "L")``, reordered to ``(values, vectors)``
eigvalsh                      ``rt.linalg.eigvalsh`` when ``runtime.numpy.linalg`` exists, else ``eigh``'s
                              values
det, slogdet, inv             ``rt.lax.det``, ``rt.lax.slogdet``, ``rt.lax.inv``
cholesky_ex, lu_factor_ex,    as their plain op; the ``info`` output is an integer, never compared
solve_ex, inv_ex
norm, vector_norm,            ``rt.linalg.<name>`` (jnp.linalg-style: ``dim`` -> ``axis``,
matrix_norm, matrix_power,    ``keepdim`` -> ``keepdims``) when ``runtime.numpy.linalg`` has it;
pinv                          skipped otherwise
pinv_singular                 ``rt.linalg.pinv(a @ b^T)`` (the family's rank-deficient product)
others                        skipped, the reason names what castwise lacks
============================  ====================================================================

PyTorch differentiates eigh, eigvalsh and cholesky through its Hermitian wrapper,
``op(a + a^H)``: records of the current generator (a ``comparison.first_order``) are
replayed the same way; the first records stored ``a + a^H`` itself and run the op on it.

Records written before ``op_kwargs`` was published leave two options implicit: a
Cholesky case is ``upper=True`` when its reference JVP is upper triangular, and a QR
case is ``mode="complete"`` when its reference ``Q`` is square.

``pytest -rs`` groups the skip reasons; with the database, the module also prints
a per-op count of passed, failed and skipped cases at its end.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import runtime as rt
from autodiff import jvp, vjp
from autodiff.derivatives.linalg import LinalgDerivativeError
from autodiff.zeros import is_zero
from runtime.core.executor import asarray
from runtime.core.tensor import Tensor

ENV = "CASTWISE_AD_ORACLES"

# -- decoding the wire format ------------------------------------------------------------------

_DTYPES = {
    "float32": np.float32,
    "float64": np.float64,
    "complex64": np.complex64,
    "complex128": np.complex128,
}


def decode(encoded: dict[str, Any]) -> np.ndarray:
    """One encoded tensor as a NumPy array: row-major ``data``, complex entries ``[re, im]``."""
    if encoded.get("order", "row_major") != "row_major":
        raise ValueError(f"unsupported tensor order {encoded.get('order')!r}")
    dtype = np.dtype(_DTYPES[encoded["dtype"]])
    data = encoded["data"]
    if dtype.kind == "c":
        flat = np.array([complex(re, im) for re, im in data], dtype=dtype)
    else:
        flat = np.array(data, dtype=dtype)
    return flat.reshape(tuple(encoded["shape"]))


def decode_map(encoded: dict[str, Any]) -> dict[str, np.ndarray]:
    return {name: decode(t) for name, t in encoded.items()}


# -- the op mapping ----------------------------------------------------------------------------

#: ``fn(inputs, args, kwargs, case)`` -> the raw result, as PyTorch's op returns it
OpFn = Callable[[dict[str, Tensor], list[Any], dict[str, Any], dict[str, Any]], Any]


@dataclass(frozen=True)
class Mapping:
    """How one PyTorch op runs on castwise: ``fn``, or ``skip`` (why it cannot)."""

    castwise: str
    fn: OpFn | None = None
    skip: str | None = None


def _only(inputs: dict[str, Tensor]) -> Tensor:
    (x,) = inputs.values()
    return x


def _broadcast(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    if x.shape == shape:
        return x
    lead = len(shape) - x.ndim
    return rt.lax.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def _mH(x: Tensor) -> Tensor:
    """The conjugate transpose of (a batch of) matrices."""
    perm = (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)
    t = rt.lax.transpose(x, perm)
    return rt.conj(t) if x.dtype.kind == "complex" else t


def _mask(shape: tuple[int, ...], keep: Callable[[Tensor, Tensor], Tensor]) -> Tensor:
    nd = len(shape)
    return keep(rt.lax.iota(rt.int32, shape, nd - 2), rt.lax.iota(rt.int32, shape, nd - 1))


def _op_abs(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    return rt.abs(_only(inputs))


def _op_exp(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    return rt.exp(_only(inputs))


def _op_where(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    condition = asarray(np.array(kwargs["condition"], dtype=bool))
    return rt.where(condition, inputs["x"], inputs["y"])


def _op_clamp(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    x = inputs["x"]
    lo, hi = inputs.get("lo", inputs.get("min")), inputs.get("hi", inputs.get("max"))
    # torch.clamp broadcasts its bounds with x; lax.clamp takes scalars or x's shape
    shape = tuple(np.broadcast_shapes(*(t.shape for t in (x, lo, hi) if t is not None)))
    x = _broadcast(x, shape)
    if lo is None:
        return rt.lax.min(x, _broadcast(hi, shape))  # type: ignore[arg-type]
    if hi is None:
        return rt.lax.max(x, _broadcast(lo, shape))
    return rt.lax.clamp(_broadcast(lo, shape), x, _broadcast(hi, shape))


def _op_cat(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    return rt.lax.concatenate(list(inputs.values()), int(kwargs.get("dim", 0)))


def _op_narrow(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    x = _only(inputs)
    dim = int(kwargs["dim"]) % x.ndim
    start = int(kwargs["start"]) % x.shape[dim] if x.shape[dim] else 0
    starts = [0] * x.ndim
    limits = list(x.shape)
    starts[dim], limits[dim] = start, start + int(kwargs["length"])
    return rt.lax.slice(x, starts, limits)


def _op_solve(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    if kwargs.get("left", True) is False:
        pytest.skip("castwise solve has no left=False (x @ a = b)")
    a, b = inputs["a"], inputs["b"]
    # torch.linalg.solve: b is a (batch of) vector(s) when b.shape == a.shape[:-1]
    if b.ndim >= 2 and b.ndim == a.ndim - 1 and b.shape == a.shape[:-1]:
        x = rt.lax.solve(a, rt.lax.reshape(b, (*b.shape, 1)))
        return rt.lax.reshape(x, b.shape)
    return rt.lax.solve(a, b)


def _op_solve_triangular(
    inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]
) -> Any:
    return rt.lax.triangular_solve(
        inputs["a"],
        inputs["b"],
        left_side=bool(kwargs.get("left", True)),
        lower=not bool(kwargs["upper"]),
        unit_diagonal=bool(kwargs.get("unitriangular", False)),
    )


def _lu_factors(packed: Tensor) -> tuple[Tensor, Tensor]:
    """``L`` (unit lower, ``m x k``) and ``U`` (upper, ``k x n``) from ``lu``'s packed factors."""
    m, n = packed.shape[-2:]
    k = min(m, n)
    lead = [0] * (packed.ndim - 2)
    left = rt.lax.slice(packed, [*lead, 0, 0], [*packed.shape[:-2], m, k])
    top = rt.lax.slice(packed, [*lead, 0, 0], [*packed.shape[:-2], k, n])
    zero_l, zero_u = rt.zeros(left.shape, packed.dtype), rt.zeros(top.shape, packed.dtype)
    eye = rt.lax.convert(_mask(left.shape, rt.lax.eq), packed.dtype)
    lower = rt.add(rt.lax.select(_mask(left.shape, rt.lax.gt), left, zero_l), eye)
    upper = rt.lax.select(_mask(top.shape, rt.lax.le), top, zero_u)
    return lower, upper


def _op_lu_factor(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    if kwargs.get("pivot", True) is False:
        pytest.skip("castwise lu always pivots (no pivot=False)")
    packed, pivots, _ = rt.lax.lu(_only(inputs))
    return packed, pivots


def _op_lu(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    if kwargs.get("pivot", True) is False:
        pytest.skip("castwise lu always pivots (no pivot=False)")
    packed, _, permutation = rt.lax.lu(_only(inputs))
    lower, upper = _lu_factors(packed)
    return permutation, lower, upper  # P is an integer-valued output: never differentiated


def _permutation_from_pivots(pivots: Any, m: int) -> np.ndarray:
    """LAPACK's 1-based row swaps (``torch.linalg.lu_factor``'s pivots) as a row permutation."""
    piv = np.asarray(pivots["data"] if isinstance(pivots, dict) else pivots, dtype=np.int64).reshape(-1, m) - 1
    perms = np.tile(np.arange(m), (piv.shape[0], 1))
    for perm, swaps in zip(perms, piv, strict=True):
        for i, j in enumerate(swaps):
            perm[i], perm[j] = perm[j], perm[i]
    return perms


def _op_lu_solve(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    # PyTorch's OpInfo calls lu_solve(LU, pivots, B): the input "a" is lu_factor's packed LU
    # and the pivots are a constant argument, which a record must carry to be replayed
    pivots = args[0] if args else kwargs.get("pivots")
    if pivots is None:
        pytest.skip(
            "the record does not store lu_solve's pivots (its input 'a' is lu_factor's packed LU; "
            "PyTorch passes the pivots as a constant argument)"
        )
    packed, b = inputs["a"], inputs["b"]
    left, adjoint = bool(kwargs.get("left", True)), bool(kwargs.get("adjoint", False))
    m = packed.shape[-1]
    perm = _permutation_from_pivots(pivots, m).reshape((*packed.shape[:-2], m))
    # P with P @ rhs == rhs[..., perm, :] and a = P^T L U
    p = asarray((perm[..., :, None] == np.arange(m)).astype(packed.dtype.storage))

    def solve_left(rhs: Tensor, adj: bool) -> Tensor:
        if not adj:  # a x = rhs: x = U^-1 L^-1 P rhs
            y = rt.lax.triangular_solve(packed, rt.matmul(p, rhs), left_side=True, lower=True, unit_diagonal=True)
            return rt.lax.triangular_solve(packed, y, left_side=True, lower=False)
        # a^H x = rhs: U^H L^H P x = rhs
        conj = packed.dtype.kind == "complex"
        y = rt.lax.triangular_solve(packed, rhs, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
        z = rt.lax.triangular_solve(
            packed, y, left_side=True, lower=True, transpose_a=True, conjugate_a=conj, unit_diagonal=True
        )
        return rt.matmul(_mH(p), z)

    if left:
        return solve_left(b, adjoint)
    # x a = b  <=>  a^H x^H = b^H ;  x a^H = b  <=>  a x^H = b^H
    return _mH(solve_left(_mH(b), not adjoint))


def _infer_upper(case: dict[str, Any]) -> bool:
    """Cholesky records without ``op_kwargs``: ``upper`` when the reference JVP is upper triangular."""
    if not case["probes"] or "pytorch_ref" not in case["probes"][0]:
        return False
    refs = case["probes"][0]["pytorch_ref"]["jvp"]
    jvp_ref = decode(refs.get("value", refs.get("output_0")))
    if jvp_ref.ndim < 2 or jvp_ref.size == 0:
        return False
    strictly_lower = np.tril(np.ones(jvp_ref.shape[-2:], bool), -1)
    return bool(np.all(jvp_ref[..., strictly_lower] == 0) and np.any(jvp_ref[..., ~strictly_lower.T] != 0))


def _op_cholesky(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    upper = bool(kwargs["upper"]) if "upper" in kwargs else _infer_upper(case)
    factor = rt.lax.cholesky(_only(inputs))
    return _mH(factor) if upper else factor


def _op_cholesky_ex(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    factor = _op_cholesky(inputs, args, kwargs, case)
    return factor, rt.zeros(factor.shape[:-2], rt.int32)  # info: an integer output, never compared


def _qr_complete(kwargs: dict[str, Any], case: dict[str, Any], a: Tensor) -> bool:
    if "mode" in kwargs:
        if kwargs["mode"] == "r":
            pytest.skip("castwise qr has no mode='r' (R only)")
        return bool(kwargs["mode"] == "complete")
    if not case["probes"]:
        return False
    q_shape = case["probes"][0]["cotangent"]["output_0"]["shape"]
    m, n = a.shape[-2:]
    return bool(m > n and q_shape[-1] == m)


def _op_qr(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    a = _only(inputs)
    return rt.lax.qr(a, full_matrices=_qr_complete(kwargs, case, a))


def _op_svd(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    # the observables take u[..., :k] and vh[..., :k, :] (k = min(m, n)): the reduced SVD
    return rt.lax.svd(_only(inputs), full_matrices=False)


def _op_svdvals(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    return rt.lax.svd(_only(inputs), full_matrices=False, compute_uv=False)


def _op_eigh(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    vectors, values = rt.lax.eigh(_only(inputs), lower=str(kwargs.get("UPLO", "L")).upper() == "L")
    return values, vectors


def _op_eigvalsh(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    lower = str(kwargs.get("UPLO", "L")).upper() == "L"
    fn = getattr(getattr(rt, "linalg", None), "eigvalsh", None)
    if fn is not None:
        return fn(_only(inputs), UPLO="L" if lower else "U")
    return rt.lax.eigh(_only(inputs), lower=lower)[1]


def _op_det(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    return rt.lax.det(_only(inputs))


def _op_slogdet(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    return rt.lax.slogdet(_only(inputs))


def _op_inv(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    return rt.lax.inv(_only(inputs))


def _rt_linalg(name: str) -> OpFn:
    """A PyTorch ``torch.linalg.<name>`` case run by ``runtime.numpy.linalg.<name>`` (jnp.linalg-style)."""

    def run(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
        fn = getattr(getattr(rt, "linalg", None), name, None)
        if fn is None:
            pytest.skip(f"castwise has no runtime.numpy.linalg.{name}")
        renamed = {{"dim": "axis", "keepdim": "keepdims"}.get(k, k): v for k, v in kwargs.items()}
        if isinstance(renamed.get("axis"), list):
            renamed["axis"] = tuple(renamed["axis"])
        if name == "matrix_norm" and renamed.get("axis") in ((-2, -1),):
            del renamed["axis"]  # jnp.linalg.matrix_norm always reduces the last two axes
        try:
            return fn(*inputs.values(), *args, **renamed)
        except TypeError as err:  # an argument runtime.numpy.linalg does not take: a gap, not a wrong number
            pytest.skip(f"runtime.numpy.linalg.{name} does not take these arguments: {err}")

    return run


def _op_pinv_singular(inputs: dict[str, Tensor], args: list[Any], kwargs: dict[str, Any], case: dict[str, Any]) -> Any:
    """PyTorch's ``pinv_singular`` family: ``pinv(a @ b^T)``, a rank-deficient product."""
    a, b = inputs["a"], inputs["b"]
    perm = (*range(b.ndim - 2), b.ndim - 1, b.ndim - 2)
    product = rt.matmul(a, rt.lax.transpose(b, perm))
    return _rt_linalg("pinv")({"a": product}, args, kwargs, case)


def _lacks(what: str) -> Mapping:
    return Mapping("-", skip=f"castwise has no {what}")


MAPPINGS: dict[str, Mapping] = {
    "abs": Mapping("rt.abs", _op_abs),
    "exp": Mapping("rt.exp", _op_exp),
    "where": Mapping("rt.where", _op_where),
    "clamp": Mapping("rt.lax.clamp", _op_clamp),
    "cat": Mapping("rt.lax.concatenate", _op_cat),
    "narrow": Mapping("rt.lax.slice", _op_narrow),
    "solve": Mapping("rt.lax.solve", _op_solve),
    "solve_ex": Mapping("rt.lax.solve", lambda i, a, k, c: (_op_solve(i, a, k, c), None)),
    "solve_triangular": Mapping("rt.lax.triangular_solve", _op_solve_triangular),
    "lu_factor": Mapping("rt.lax.lu", _op_lu_factor),
    "lu_factor_ex": Mapping("rt.lax.lu", lambda i, a, k, c: (*_op_lu_factor(i, a, k, c), None)),
    "lu": Mapping("rt.lax.lu", _op_lu),
    "lu_solve": Mapping("rt.lax.triangular_solve", _op_lu_solve),
    "cholesky": Mapping("rt.lax.cholesky", _op_cholesky),
    "cholesky_ex": Mapping("rt.lax.cholesky", _op_cholesky_ex),
    "qr": Mapping("rt.lax.qr", _op_qr),
    "svd": Mapping("rt.lax.svd", _op_svd),
    "svdvals": Mapping("rt.lax.svd(compute_uv=False)", _op_svdvals),
    "eigh": Mapping("rt.lax.eigh", _op_eigh),
    "eigvalsh": Mapping("rt.linalg.eigvalsh / rt.lax.eigh", _op_eigvalsh),
    "det": Mapping("rt.lax.det", _op_det),
    "slogdet": Mapping("rt.lax.slogdet", _op_slogdet),
    "inv": Mapping("rt.lax.inv", _op_inv),
    "inv_ex": Mapping("rt.lax.inv", lambda i, a, k, c: (_op_inv(i, a, k, c), None)),
    "norm": Mapping("rt.linalg.norm", _rt_linalg("norm")),
    "vector_norm": Mapping("rt.linalg.vector_norm", _rt_linalg("vector_norm")),
    "matrix_norm": Mapping("rt.linalg.matrix_norm", _rt_linalg("matrix_norm")),
    "matrix_power": Mapping("rt.linalg.matrix_power", _rt_linalg("matrix_power")),
    "pinv": Mapping("rt.linalg.pinv", _rt_linalg("pinv")),
    "pinv_hermitian": _lacks("pinv(hermitian=True) mapping (its wrapper semantics are not replayed here)"),
    "pinv_singular": Mapping("rt.linalg.pinv(a @ b^T)", _op_pinv_singular),
    "eig": _lacks("eigenvector derivative (JAX differentiates only eig's eigenvalues)"),
    "eigvals": _lacks("mapping for eigvals' PyTorch output ordering (not replayed here)"),
    "matrix_exp": _lacks("matrix_exp"),
    "cross": _lacks("cross (linalg.cross)"),
    "diagonal": _lacks("diagonal mapping (not replayed here)"),
    "vander": _lacks("vander"),
    "vecdot": _lacks("vecdot mapping (not replayed here)"),
    "tensorinv": _lacks("tensorinv"),
    "tensorsolve": _lacks("tensorsolve"),
    "multi_dot": _lacks("multi_dot mapping (not replayed here)"),
    "lstsq_grad_oriented": _lacks("lstsq"),
}


# -- observables (the database's definitions) --------------------------------------------------


def observe(kind: str, result: Any) -> dict[str, Any]:
    """The named outputs a case compares: the raw result, or a gauge-invariant view of it."""
    if kind == "identity":
        if isinstance(result, tuple):
            return {f"output_{i}": r for i, r in enumerate(result)}
        return {"value": result}
    if kind.startswith("svd_"):
        u, s, vh = result  # reduced already: u[..., :k], s, vh[..., :k, :]
        if kind == "svd_u_abs":
            return {"u": rt.abs(u)}
        if kind == "svd_s":
            return {"s": s}
        if kind == "svd_vh_abs":
            return {"s": s, "vh": rt.abs(vh)}
        if kind == "svd_uvh_product":
            return {"uvh": rt.matmul(u, vh), "s": s}
    if kind == "eigh_values_vectors_abs":
        values, vectors = result
        return {"values": values, "vectors": rt.abs(vectors)}
    pytest.skip(f"observable {kind!r} is not replayed")


# -- the cases ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    path: str
    record: dict[str, Any]

    @property
    def op(self) -> str:
        return str(self.record["op"])


def _root() -> Path | None:
    value = os.environ.get(ENV)
    return Path(value) if value else None


def load_cases(root: Path) -> list[Case]:
    cases_dir = root / "cases"
    if not cases_dir.is_dir():
        raise FileNotFoundError(f"{ENV}={root}: no cases/ directory there (clone tensor-ad-oracles and point at it)")
    out = []
    for path in sorted(cases_dir.glob("*/*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                out.append(Case(str(path.relative_to(root)), json.loads(line)))
    return out


_ROOT = _root()
CASES = load_cases(_ROOT) if _ROOT is not None else []
_PARAMS = (
    [pytest.param(c, id=str(c.record["case_id"])) for c in CASES]
    if _ROOT is not None
    else [
        pytest.param(
            None,
            id="database-absent",
            marks=pytest.mark.skip(
                reason=f"tensor-ad-oracles is not available: set {ENV} to a clone of "
                "https://github.com/shinaoka/tensor-ad-oracles to replay it"
            ),
        )
    ]
)

# -- outcome summary (printed at the module's end when the database is replayed) ---------------

_OUTCOMES: dict[str, Counter[str]] = defaultdict(Counter)
_SKIPS: dict[str, Counter[str]] = defaultdict(Counter)


@pytest.fixture(scope="module", autouse=True)
def _summary(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if not _OUTCOMES:
        return
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    lines = ["", f"tensor-ad-oracles replay ({_ROOT}): per op passed / failed / skipped"]
    for op in sorted(_OUTCOMES):
        c = _OUTCOMES[op]
        lines.append(f"  {op:20s} {c['passed']:4d} {c['failed']:4d} {c['skipped']:4d}")
        for reason, n in _SKIPS[op].most_common():
            lines.append(f"      skipped {n}: {reason}")
    if reporter is not None:
        for line in lines:
            reporter.write_line(line)


# -- comparison --------------------------------------------------------------------------------


def _numpy(x: Any, like: np.ndarray) -> np.ndarray:
    if x is None or is_zero(x):
        return np.zeros(like.shape, like.dtype)
    return np.asarray(x.numpy() if isinstance(x, Tensor) else x)


def assert_allclose(what: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> None:
    """``|got - want| <= atol + rtol * |want|`` elementwise, same shape and dtype."""
    assert got.shape == want.shape, f"{what}: shape {got.shape}, reference {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, reference {want.dtype}"
    if got.size == 0:
        return
    err = np.abs(got.astype(np.complex128) - want.astype(np.complex128))
    bound = atol + rtol * np.abs(want.astype(np.complex128))
    both_nan = np.isnan(got) & np.isnan(want)
    bad = ~((err <= bound) | both_nan)
    if bad.any():
        i = np.unravel_index(int(np.argmax(np.where(bad, err - bound, -np.inf))), got.shape)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {got.size} elements differ (rtol={rtol}, atol={atol}); "
            f"worst at {tuple(int(j) for j in i)}: got {got[i]!r}, reference {want[i]!r}; "
            f"max abs error {float(err.max()):.3e}"
        )


def _inner(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> complex:
    return complex(sum(np.vdot(a[k].ravel(), b[k].ravel()) for k in a))


def _tolerances(comparison: dict[str, Any]) -> tuple[float, float]:
    first = comparison.get("first_order", comparison)
    return float(first["rtol"]), float(first["atol"])


# -- the replay --------------------------------------------------------------------------------


#: ops whose PyTorch OpInfo differentiates ``op(a + a^H)`` (``gradcheck_wrapper_hermitian_input``)
HERMITIAN_WRAPPED = frozenset({"eigh", "eigvalsh", "cholesky", "cholesky_ex"})


def hermitian_wrapped(record: dict[str, Any]) -> bool:
    """Whether the case's observable reads ``a + a^H`` rather than ``a``.

    The current generator (``comparison.first_order``) stores the raw sample and evaluates
    through PyTorch's Hermitian wrapper; the first records (a flat ``comparison``) stored
    the already symmetrized ``a + a^H`` and evaluated the op on it directly.
    """
    return record["op"] in HERMITIAN_WRAPPED and "first_order" in record["comparison"]


def _observable_fn(case: Case, mapping: Mapping, names_in: list[str], names_out: list[str]) -> Callable[..., Any]:
    record = case.record
    args, kwargs = list(record.get("op_args", [])), dict(record.get("op_kwargs", {}))
    kind = record["observable"]["kind"]
    wrapped = hermitian_wrapped(record)
    assert mapping.fn is not None

    def f(*xs: Tensor) -> tuple[Tensor, ...]:
        inputs = dict(zip(names_in, xs, strict=True))
        if wrapped:
            inputs["a"] = rt.add(inputs["a"], _mH(inputs["a"]))
        out = observe(kind, mapping.fn(inputs, args, kwargs, record))  # type: ignore[misc]
        missing = [n for n in names_out if n not in out or out[n] is None]
        assert not missing, f"the castwise mapping produced no {missing} (it has {sorted(out)})"
        return tuple(out[n] for n in names_out)

    return f


def _replay_error_case(case: Case, mapping: Mapping) -> None:
    """PyTorch raises (``reason_code``); castwise must raise too, or the row skips and says why."""
    record = case.record
    reason = record["comparison"].get("reason_code", "error")
    inputs = decode_map(record["inputs"])
    names_in = list(inputs)
    kind = record["observable"]["kind"]
    args, kwargs = list(record.get("op_args", [])), dict(record.get("op_kwargs", {}))

    def raw(*xs: Tensor) -> tuple[Tensor, ...]:
        # PyTorch's check differentiates a loss that depends on the vectors' phases: the raw
        # decomposition (U and Vh, or the eigenvectors), not the gauge-invariant observable
        inputs = dict(zip(names_in, xs, strict=True))
        if hermitian_wrapped(record):
            inputs["a"] = rt.add(inputs["a"], _mH(inputs["a"]))
        out = mapping.fn(inputs, args, kwargs, record)  # type: ignore[misc]
        return tuple(t for t in out if isinstance(t, Tensor) and t.dtype.is_inexact)

    try:
        primals = [asarray(v) for v in inputs.values()]
        outs, fn = vjp(raw, *primals)
        fn(tuple(rt.ones(o.shape, o.dtype) for o in outs))
    except Exception:  # any castwise error is the expected refusal
        return
    pytest.skip(
        f"castwise computes {kind} derivatives where PyTorch raises ({reason}): like JAX, it does not "
        "check that the loss is invariant under the vectors' phases"
    )


def _replay(case: Case) -> None:
    record = case.record
    mapping = MAPPINGS.get(case.op)
    if mapping is None:
        pytest.skip(f"op {case.op!r} has no row in the mapping table")
    if mapping.fn is None:
        pytest.skip(str(mapping.skip))
    if record["expected_behavior"] != "success":
        _replay_error_case(case, mapping)
        return
    rtol, atol = _tolerances(record["comparison"])
    inputs = decode_map(record["inputs"])
    names_in = list(inputs)
    primals = [asarray(v) for v in inputs.values()]
    assert record["probes"], "a success case has at least one probe"
    for probe in record["probes"]:
        pid = probe.get("probe_id", "?")
        direction = decode_map(probe["direction"])
        cotangent = decode_map(probe["cotangent"])
        names_out = list(cotangent)
        f = _observable_fn(case, mapping, names_in, names_out)

        try:
            _, tangents_out = jvp(f, primals, [asarray(direction[n]) for n in names_in])
            cts = tuple(asarray(cotangent[n]) for n in names_out)
            _, vjp_fn = vjp(f, *primals)
            grads = vjp_fn(cts)
        except LinalgDerivativeError as err:  # a documented refusal (as jax.lax.linalg's), not a wrong number
            pytest.skip(
                f"castwise refuses this derivative, as JAX does: {str(err).split(': ', 1)[0]}: "
                f"{str(err).rsplit(': ', 1)[-1]}"
            )

        ref = probe.get("pytorch_ref")
        if ref is not None:
            for n, t in zip(names_out, tangents_out, strict=True):
                want = decode(ref["jvp"][n])
                assert_allclose(f"probe {pid}: JVP of {n!r}", _numpy(t, want), want, rtol, atol)
            for n, g in zip(names_in, grads, strict=True):
                want = decode(ref["vjp"][n])
                assert_allclose(f"probe {pid}: VJP for input {n!r}", _numpy(g, want), want, rtol, atol)
        else:  # no PyTorch reference: finite differences and the adjoint identity
            fd = decode_map(probe["fd_ref"]["jvp"])
            got_jvp = {n: _numpy(t, fd[n]) for n, t in zip(names_out, tangents_out, strict=True)}
            for n in names_out:
                assert_allclose(f"probe {pid}: JVP of {n!r} vs fd_ref", got_jvp[n], fd[n], rtol, atol)
            got_vjp = {n: _numpy(g, direction[n]) for n, g in zip(names_in, grads, strict=True)}
            lhs, rhs = _inner(cotangent, fd), _inner(got_vjp, direction)
            assert abs(lhs.real - rhs.real) <= atol + rtol * abs(lhs.real), (
                f"probe {pid}: adjoint identity <ct, J v>={lhs.real!r} vs <J* ct, v>={rhs.real!r}"
            )


@pytest.mark.parametrize("case", _PARAMS)
def test_oracle_case(case: Case | None) -> None:
    """One database case: castwise's JVP and VJP of the case's observable against PyTorch's."""
    assert case is not None
    try:
        _replay(case)
    except pytest.skip.Exception as skip:
        _OUTCOMES[case.op]["skipped"] += 1
        _SKIPS[case.op][str(skip.msg)] += 1
        raise
    except BaseException:
        _OUTCOMES[case.op]["failed"] += 1
        raise
    _OUTCOMES[case.op]["passed"] += 1


# -- checks that run without the database ------------------------------------------------------


def test_decode_wire_format() -> None:
    """Row-major data, complex numbers as [re, im] pairs, 0-d and empty tensors."""
    real = decode({"dtype": "float32", "shape": [2, 2], "order": "row_major", "data": [1.0, 2.0, 3.0, 4.0]})
    assert real.dtype == np.float32 and real.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    z = decode({"dtype": "complex128", "shape": [2], "order": "row_major", "data": [[1.0, -2.0], [0.5, 0.25]]})
    assert z.dtype == np.complex128 and z.tolist() == [1 - 2j, 0.5 + 0.25j]
    scalar = decode({"dtype": "float64", "shape": [], "order": "row_major", "data": [1.5]})
    assert scalar.shape == () and float(scalar) == 1.5
    empty = decode({"dtype": "complex64", "shape": [0, 5, 5], "order": "row_major", "data": []})
    assert empty.shape == (0, 5, 5) and empty.dtype == np.complex64


def test_mapping_rows_are_runnable_or_say_why() -> None:
    """Each row of the table either runs the op or names what castwise lacks, never both."""
    for op, m in MAPPINGS.items():
        assert (m.fn is None) != (m.skip is None), op
        if m.fn is None:
            assert m.skip and m.skip.startswith("castwise has no"), op


def test_assert_allclose_uses_the_case_tolerance() -> None:
    want = np.array([1.0, -2.0])
    assert_allclose("ok", np.array([1.0 + 1e-7, -2.0]), want, rtol=1e-6, atol=0.0)
    with pytest.raises(AssertionError, match="1 of 2 elements differ"):
        assert_allclose("bad", np.array([1.0 + 1e-5, -2.0]), want, rtol=1e-6, atol=0.0)
    with pytest.raises(AssertionError, match="dtype"):
        assert_allclose("dtype", want.astype(np.float32), want, rtol=1.0, atol=1.0)


def test_lu_solve_mapping_matches_numpy() -> None:
    """The lu_solve options (left/right, adjoint) on lu_factor's output solve what ``torch.linalg.lu_solve`` does."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    packed, pivots, _ = rt.lax.lu(a)
    b_left = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    for left, adjoint in [(True, False), (True, True), (False, False), (False, True)]:
        b = b_left if left else b_left.T.copy()
        kwargs = {"left": left, "adjoint": adjoint}
        x = _op_lu_solve({"a": packed, "b": asarray(b)}, [(pivots.numpy() + 1).tolist()], kwargs, {}).numpy()
        op_a = a.conj().T if adjoint else a
        np.testing.assert_allclose(op_a @ x if left else x @ op_a, b, rtol=1e-12, atol=1e-12)
    with pytest.raises(pytest.skip.Exception, match="pivots"):
        _op_lu_solve({"a": packed, "b": asarray(b_left)}, [], {}, {})


def test_lu_factors_reassemble() -> None:
    """``_op_lu``'s L and U (rectangular, both orientations) rebuild ``a[permutation]``."""
    rng = np.random.default_rng(1)
    for shape in [(3, 5), (5, 3), (4, 4)]:
        a = rng.standard_normal(shape)
        perm, lower, upper = _op_lu({"a": asarray(a)}, [], {}, {})
        np.testing.assert_allclose(lower.numpy() @ upper.numpy(), a[perm.numpy()], rtol=1e-12, atol=1e-12)


def test_solve_mapping_reads_batched_vectors_as_torch_does() -> None:
    """``b`` of shape ``a.shape[:-1]`` is a batch of vectors (``torch.linalg.solve``), 1-D ``b`` a vector."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((2, 3))
    x = _op_solve({"a": asarray(a), "b": asarray(b)}, [], {}, {}).numpy()
    np.testing.assert_allclose(x, np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-12)
    v = rng.standard_normal(3)
    x1 = _op_solve({"a": asarray(a[0]), "b": asarray(v)}, [], {}, {}).numpy()
    np.testing.assert_allclose(x1, np.linalg.solve(a[0], v), rtol=1e-12)


def test_hermitian_wrapper_only_for_current_records_of_wrapped_ops() -> None:
    current = {"first_order": {"rtol": 1e-6, "atol": 1e-7}}
    flat = {"kind": "allclose", "rtol": 1e-6, "atol": 1e-7}
    assert hermitian_wrapped({"op": "eigvalsh", "comparison": current})
    assert hermitian_wrapped({"op": "cholesky", "comparison": current})
    assert not hermitian_wrapped({"op": "eigh", "comparison": flat})
    assert not hermitian_wrapped({"op": "qr", "comparison": current})


def test_pivots_become_the_row_permutation() -> None:
    """LAPACK's 1-based swaps, as ``torch.linalg.lu_factor`` returns them, replay ``rt.lax.lu``'s permutation."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 4, 4))
    _, pivots, permutation = rt.lax.lu(a)
    np.testing.assert_array_equal(_permutation_from_pivots(pivots.numpy() + 1, 4), permutation.numpy())
