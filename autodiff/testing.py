"""Derivative checks for users' own test suites.

``check_grads`` compares forward mode with central finite differences and
reverse mode with forward mode through the inner-product identity
``<u, J v> == <J* u, v>`` (real inner product ``Re(sum(conj(a) * b))``), to any
order. Tolerances per dtype follow JAX's test utilities in spirit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autodiff.api import jvp, vjp
from runtime.dtypes import DType
from runtime.tensor import Tensor, asarray

#: finite-difference step per dtype
DEFAULT_EPS: dict[str, float] = {"float16": 3e-2, "bfloat16": 3e-2, "float32": 1e-3, "float64": 1e-5,
                                 "complex64": 1e-3, "complex128": 1e-5}  # fmt: skip
#: relative/absolute tolerance per dtype
DEFAULT_TOL: dict[str, float] = {"float16": 1e-1, "bfloat16": 2e-1, "float32": 2e-2, "float64": 1e-5,
                                 "complex64": 2e-2, "complex128": 1e-5}  # fmt: skip


def _tol(dtypes: Sequence[DType], table: dict[str, float], default: float) -> float:
    return max((table.get(d.name, default) for d in dtypes), default=default)


def inner(a: Any, b: Any) -> float:
    """Real inner product Re(sum(conj(a) * b)) in float64/complex128."""
    x = np.asarray(a).astype(np.complex128)
    y = np.asarray(b).astype(np.complex128)
    return float(np.real(np.sum(np.conj(x) * y)))


def _random_like(t: Tensor, rng: np.random.Generator) -> Tensor:
    shape = t.shape
    if t.dtype.kind == "complex":
        data = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    else:
        data = rng.standard_normal(shape)
    return Tensor(np.asarray(data).astype(t.dtype.storage), t.dtype)


def _as_list(x: Any) -> list[Tensor]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _wide(x: Tensor) -> np.ndarray:
    a = x.numpy()
    return a.astype(np.complex128) if x.dtype.kind == "complex" else a.astype(np.float64)


def _assert_close(name: str, got: Any, want: Any, tol: float) -> None:
    got_a, want_a = np.asarray(got), np.asarray(want)
    if not np.allclose(got_a, want_a, rtol=tol, atol=tol, equal_nan=True):
        err = np.max(np.abs(got_a - want_a)) if got_a.size else 0.0
        raise AssertionError(
            f"{name} mismatch (max abs error {err:.3g}, tolerance {tol:.3g}):\n got  {got_a}\n want {want_a}"
        )


def check_jvp(f: Callable[..., Any], args: Sequence[Any], eps: float | None = None, tol: float | None = None,
              rng: np.random.Generator | None = None) -> None:  # fmt: skip
    """Forward mode against central differences along a random direction."""
    rng = rng or np.random.default_rng(0)
    xs = [x if isinstance(x, Tensor) else asarray(x) for x in args]
    dtypes = [x.dtype for x in xs if x.dtype.is_inexact]
    eps = eps if eps is not None else _tol(dtypes, DEFAULT_EPS, 1e-5)
    tol = tol if tol is not None else _tol(dtypes, DEFAULT_TOL, 1e-5)
    tangents = [_random_like(x, rng) if x.dtype.is_inexact else None for x in xs]

    def shifted(sign: float) -> list[np.ndarray]:
        moved = [
            Tensor((_wide(x) + sign * eps * _wide(t)).astype(x.dtype.storage), x.dtype) if t is not None else x
            for x, t in zip(xs, tangents, strict=True)
        ]
        return [_wide(o) for o in _as_list(f(*moved))]

    _, out_t = jvp(f, xs, tangents)
    plus, minus = shifted(1.0), shifted(-1.0)
    for i, (t, p, m) in enumerate(zip(_as_list(out_t), plus, minus, strict=True)):
        _assert_close(f"JVP output {i} vs finite differences", _wide(t), (p - m) / (2 * eps), tol)


def check_vjp(f: Callable[..., Any], args: Sequence[Any], tol: float | None = None,
              rng: np.random.Generator | None = None) -> None:  # fmt: skip
    """Reverse mode against forward mode: <u, J v> == <J* u, v>."""
    rng = rng or np.random.default_rng(1)
    xs = [x if isinstance(x, Tensor) else asarray(x) for x in args]
    dtypes = [x.dtype for x in xs if x.dtype.is_inexact]
    tol = tol if tol is not None else _tol(dtypes, DEFAULT_TOL, 1e-5)
    tangents = [_random_like(x, rng) if x.dtype.is_inexact else None for x in xs]
    out, out_t = jvp(f, xs, tangents)
    outs = _as_list(out)
    cts = [_random_like(o, rng) if o.dtype.is_inexact else None for o in outs]
    _, vjp_fn = vjp(f, *xs)
    in_cts = vjp_fn(tuple(cts) if isinstance(out, tuple) else cts[0])
    lhs = sum(inner(c.numpy(), t.numpy()) for c, t in zip(cts, _as_list(out_t), strict=True) if c is not None)
    rhs = sum(
        inner(c.numpy(), t.numpy()) for c, t in zip(in_cts, tangents, strict=True) if c is not None and t is not None
    )
    scale = max(1.0, abs(lhs), abs(rhs))
    if abs(lhs - rhs) > tol * scale:
        raise AssertionError(f"VJP is not the adjoint of JVP: <u, Jv> = {lhs!r}, <J*u, v> = {rhs!r} (tolerance {tol})")


def check_grads(
    f: Callable[..., Any],
    args: Sequence[Any],
    order: int = 2,
    modes: Sequence[str] = ("fwd", "rev"),
    eps: float | None = None,
    atol: float | None = None,
    rtol: float | None = None,
) -> None:
    """Check ``f``'s derivatives up to ``order`` in the given ``modes``.

    ``fwd``: JVP against central finite differences. ``rev``: VJP against JVP
    by the inner-product identity. Higher orders check the derivative
    functions themselves. Raises ``AssertionError`` on a mismatch.
    """
    tol = atol if atol is not None else rtol
    xs = [x if isinstance(x, Tensor) else asarray(x) for x in args]
    rng = np.random.default_rng(0)
    if "fwd" in modes:
        check_jvp(f, xs, eps=eps, tol=tol, rng=rng)
    if "rev" in modes:
        check_vjp(f, xs, tol=tol, rng=rng)
    if order <= 1:
        return
    tangents = [_random_like(x, rng) if x.dtype.is_inexact else None for x in xs]
    if "fwd" in modes:

        def f_jvp(*primals: Any) -> Any:
            return jvp(f, primals, tangents)[1]

        check_grads(f_jvp, xs, order - 1, ("fwd",), eps, atol, rtol)
    if "rev" in modes:
        out = f(*xs)
        cts = [_random_like(o, rng) if o.dtype.is_inexact else None for o in _as_list(out)]
        ct_arg = tuple(cts) if isinstance(out, tuple) else cts[0]

        def f_vjp(*primals: Any) -> Any:
            grads = vjp(f, *primals)[1](ct_arg)
            return tuple(g for g in grads if g is not None)

        check_grads(f_vjp, xs, order - 1, ("rev",), eps, atol, rtol)
