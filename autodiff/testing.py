"""Derivative checks for users' own test suites.

``check_grads`` compares forward mode with central finite differences and
reverse mode with forward mode through the inner-product identity
``<u, J v> == <J* u, v>`` (real inner product ``Re(sum(conj(a) * b))``), to any
order. Tolerances per dtype follow JAX's test utilities in spirit.

``check_against_jax`` compares a castwise function with its JAX twin: primal
dtypes and values, ``jvp`` against ``jax.jvp`` and ``vjp`` against ``jax.vjp``
(conjugated: castwise's reverse-mode convention is PyTorch's). JAX is imported
only when it is called. See ``docs/testing.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

import numpy as np

from autodiff.api import jvp, vjp
from autodiff.custom import CustomVJPForwardError
from autodiff.pytree import TreeDef, leaf_paths, tree_flatten, tree_structure, tree_unflatten
from runtime.core.dtypes import DType
from runtime.core.dtypes import dtype as dtype_of
from runtime.core.executor import asarray
from runtime.core.promotion import get_policy
from runtime.core.tensor import Tensor

__all__ = [
    "DEFAULT_EPS",
    "DEFAULT_TOL",
    "PARITY_MODES",
    "PARITY_TOL",
    "check_against_jax",
    "check_grads",
    "check_jvp",
    "check_vjp",
    "close_over",
    "inner",
    "parity_tolerance",
]

#: finite-difference step per dtype
DEFAULT_EPS: dict[str, float] = {"float16": 3e-2, "bfloat16": 3e-2, "float32": 1e-3, "float64": 1e-5,
                                 "complex64": 1e-3, "complex128": 1e-5}  # fmt: skip
#: relative/absolute tolerance per dtype
DEFAULT_TOL: dict[str, float] = {"float16": 1e-1, "bfloat16": 2e-1, "float32": 2e-2, "float64": 1e-5,
                                 "complex64": 2e-2, "complex128": 1e-5}  # fmt: skip


def _tol(dtypes: Sequence[DType], table: dict[str, float], default: float) -> float:
    return max((table.get(d.name, default) for d in dtypes), default=default)


def close_over(fn: Callable[..., Any], args: Sequence[Any], active: Sequence[int]) -> Callable[..., Any]:
    """``fn`` as a function of the operands at positions ``active`` only; the other
    ``args`` are closed over as constants (so they are inactive in jvp/vjp)."""

    def closed(*values: Any) -> Any:
        call = list(args)
        for i, value in zip(active, values, strict=True):
            call[i] = value
        return fn(*call)

    return closed


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
    try:
        for i, (t, p, m) in enumerate(zip(_as_list(out_t), plus, minus, strict=True)):
            _assert_close(f"JVP output {i} vs finite differences", _wide(t), (p - m) / (2 * eps), tol)
    except AssertionError as err:
        raise AssertionError(f"{err}{_custom_note(f, xs)}") from None


def check_vjp(f: Callable[..., Any], args: Sequence[Any], tol: float | None = None,
              rng: np.random.Generator | None = None) -> None:  # fmt: skip
    """Reverse mode against forward mode: <u, J v> == <J* u, v>."""
    rng = rng or np.random.default_rng(1)
    xs = [x if isinstance(x, Tensor) else asarray(x) for x in args]
    dtypes = [x.dtype for x in xs if x.dtype.is_inexact]
    tol = tol if tol is not None else _tol(dtypes, DEFAULT_TOL, 1e-5)
    tangents = [_random_like(x, rng) if x.dtype.is_inexact else None for x in xs]
    out, vjp_fn = vjp(f, *xs)
    outs = _as_list(out)
    cts = [_random_like(o, rng) if o.dtype.is_inexact else None for o in outs]
    in_cts = vjp_fn(tuple(cts) if isinstance(out, tuple) else cts[0])
    try:
        _, out_t = jvp(f, xs, tangents)
        directional = [t.numpy() for t in _as_list(out_t)]
        against = "forward mode"
    except CustomVJPForwardError:
        # a custom_vjp function has no forward mode (JAX's rule): J v by central differences instead
        eps = _tol(dtypes, DEFAULT_EPS, 1e-5)

        def shifted(sign: float) -> list[np.ndarray]:
            moved = [
                Tensor((_wide(x) + sign * eps * _wide(t)).astype(x.dtype.storage), x.dtype) if t is not None else x
                for x, t in zip(xs, tangents, strict=True)
            ]
            return [_wide(o) for o in _as_list(f(*moved))]

        directional = [(p - m) / (2 * eps) for p, m in zip(shifted(1.0), shifted(-1.0), strict=True)]
        against = "central differences"
    lhs = sum(inner(c.numpy(), t) for c, t in zip(cts, directional, strict=True) if c is not None)
    rhs = sum(
        inner(c.numpy(), t.numpy()) for c, t in zip(in_cts, tangents, strict=True) if c is not None and t is not None
    )
    scale = max(1.0, abs(lhs), abs(rhs))
    if abs(lhs - rhs) > tol * scale:
        what = "the adjoint of JVP" if against == "forward mode" else "consistent with central differences"
        raise AssertionError(
            f"VJP is not {what}: <u, Jv> = {lhs!r} ({against}), <J*u, v> = {rhs!r} (reverse mode) "
            f"(tolerance {tol}){_custom_note(f, xs)}"
        )


def _custom_note(f: Callable[..., Any], xs: Sequence[Tensor]) -> str:
    """Names the custom derivative rules ``f`` calls (the usual suspects when derivatives disagree)."""
    from runtime.core.graph import trace

    try:
        graph = trace(lambda *a: _as_list(f(*a)), *xs)
    except Exception:  # the note is a hint: a function trace cannot handle gets none
        return ""
    calls = []
    for eqn in graph.eqns:
        if eqn.op.family == "call":
            kind = eqn.op.name.removesuffix("_call")
            rule = eqn.params.get("jvp") or eqn.params.get("bwd")
            calls.append(f"{kind} function {eqn.params['name']!r} (rule {getattr(rule, '__name__', rule)!r})")
    if not calls:
        return ""
    return (
        f"\n{'; '.join(dict.fromkeys(calls))}: f calls custom derivative rules, and a wrong rule is the likely "
        "cause: check its tangents/cotangents against the function's derivative"
    )


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

    ``args`` holds one pytree per argument of ``f`` and ``f`` may return any
    pytree: both are checked leaf by leaf.
    """
    f, args = _over_leaves(f, args)
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


# -- parity with JAX ---------------------------------------------------------------------------

#: Primal/derivative parity tolerance per dtype name (relative, and absolute
#: scaled by ``max(1, max |expected|)``); bool and integer results must match exactly.
PARITY_TOL: dict[str, float] = {
    "float64": 1e-10, "complex128": 1e-10,
    "float32": 1e-5, "float32r": 1e-5, "complex64": 1e-5,
    "float16": 5e-3, "bfloat16": 3e-2,
    "float8_e3m4": 0.25, "float8_e4m3": 0.25, "float8_e4m3fn": 0.25, "float8_e4m3fnuz": 0.25,
    "float8_e4m3b11fnuz": 0.25, "float8_e5m2": 0.5, "float8_e5m2fnuz": 0.5, "float8_e8m0fnu": 1.0,
    "float6_e2m3fn": 0.5, "float6_e3m2fn": 0.5, "float4_e2m1fn": 1.0,
}  # fmt: skip

PARITY_MODES: tuple[str, ...] = ("primal", "jvp", "vjp")


def parity_tolerance(dtypes: Sequence[DType]) -> float:
    """The loosest ``PARITY_TOL`` entry among the inexact ``dtypes`` (0.0 when none is inexact).

    Used for every comparison of one ``check_against_jax`` call: a value
    computed through a lower-precision intermediate is only as accurate as
    that intermediate, whatever dtype it ends in.
    """
    return max((PARITY_TOL.get(d.name, 1e-5) for d in dtypes if d.is_inexact), default=0.0)


def _parity_random(dtype: DType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Standard-normal values (complex: both parts) stored as ``dtype`` (e8m0: magnitudes only)."""
    data: np.ndarray = rng.standard_normal(shape)
    if dtype.kind == "complex":
        data = data + 1j * rng.standard_normal(shape)
    elif dtype.name == "float8_e8m0fnu":  # no sign bit, no zero
        data = np.abs(data) + 0.5
    return np.asarray(data).astype(dtype.storage)


def _describe(dtype: DType, shape: tuple[int, ...]) -> str:
    return f"{dtype.short}[{','.join(map(str, shape))}]"


def _as_numpy(x: Any) -> np.ndarray:
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def _compare_values(what: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float | None) -> None:
    """Raise ``AssertionError`` naming ``what`` unless ``got`` matches ``want``.

    Exact comparison for bool and integer arrays; otherwise
    ``|got - want| <= atol + rtol * |want|`` elementwise with NaNs in the same
    places, ``atol`` defaulting to ``rtol * max(1, max |want|)``.
    """
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {got.shape} differs from JAX's {want.shape}")
    exact = got.dtype.kind in "biu" and want.dtype.kind in "biu"
    wide = np.complex128 if "c" in (got.dtype.kind, want.dtype.kind) else np.float64
    g = got.astype(wide)
    w = want.astype(wide)
    if exact:
        bad = g != w
        if np.any(bad):
            raise AssertionError(
                f"{what}: {int(np.sum(bad))} of {g.size} element(s) differ (exact comparison):\n"
                f" castwise {got!r}\n jax      {want!r}"
            )
        return
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if np.any(nan_g != nan_w):
        raise AssertionError(f"{what}: NaNs in different places:\n castwise {got!r}\n jax      {want!r}")
    inf_w = np.isinf(w)
    finite_w = np.where(nan_w | inf_w, 0.0, w)
    scale = max(1.0, float(np.max(np.abs(finite_w), initial=0.0)))
    a_tol = rtol * scale if atol is None else atol
    with np.errstate(invalid="ignore"):
        err = np.abs(g - w)
    # NaN pairs match; an infinity must be matched exactly; elsewhere the error is bounded
    err = np.where(nan_w, 0.0, np.where(inf_w, np.where(g == w, 0.0, np.inf), err))
    allowed = a_tol + rtol * np.abs(finite_w)
    excess = err - allowed
    if np.any(excess > 0):
        worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
        where = f" at index {tuple(int(i) for i in worst)}" if excess.ndim else ""
        raise AssertionError(
            f"{what}: max abs error {float(np.max(err)):.3g} exceeds the tolerance{where} "
            f"(|got - want| <= atol + rtol * |want| with rtol={rtol:.3g}, atol={a_tol:.3g}):\n"
            f" castwise {got!r}\n jax      {want!r}"
        )


def _flat_outputs(out: Any, side: str) -> tuple[list[Any], TreeDef]:
    """The leaves of a function's output pytree and its structure."""
    if out is None:
        raise TypeError(f"check_against_jax: the {side} function returned None")
    return tree_flatten(out)


def _over_leaves(f: Callable[..., Any], args: Sequence[Any]) -> tuple[Callable[..., Any], list[Any]]:
    """``f`` as a function of the leaves of its pytree ``args`` returning its output's leaves
    (a tuple), and those leaves; ``f`` and ``args`` unchanged when every argument is an array
    and ``f`` returns an array or a flat tuple."""
    leaves, in_tree = tree_flatten(tuple(args))
    flat_args = in_tree == tree_structure((0,) * len(args))

    def flat(*xs: Any) -> Any:
        out = f(*(xs if flat_args else tree_unflatten(in_tree, xs)))
        if flat_args and (type(out) is tuple or not isinstance(out, tuple | list | dict)) and out is not None:
            return out
        return tuple(tree_flatten(out)[0])

    return flat, (list(args) if flat_args else leaves)


def check_against_jax(
    f_castwise: Callable[..., Any],
    f_jax: Callable[..., Any],
    args: Sequence[Any],
    modes: Sequence[str] = PARITY_MODES,
    rtol: float | None = None,
    atol: float | None = None,
    *,
    seed: int = 0,
) -> None:
    """Check a castwise function against its JAX twin: primal, JVP and VJP.

    ``args`` are Tensors, NumPy arrays or Python data; each becomes a castwise
    Tensor (its dtype kept; Python data takes the active policy's default) and a
    JAX array with the same storage dtype (strongly typed). ``f_castwise`` runs
    on the Tensors under the active policy, ``f_jax`` on the JAX arrays with x64
    enabled (and JAX's ``strict`` promotion mode when the active policy is
    ``jax-strict``). Both return one array or a tuple/list of arrays.

    Modes:

    * ``"primal"``: each output's dtype equals JAX's and its values agree;
    * ``"jvp"``: with random tangents for every float/complex argument,
      ``autodiff.jvp`` agrees with ``jax.jvp`` (integer outputs: zero tangent);
    * ``"vjp"``: with a random cotangent for every float/complex output,
      ``ours(ct) == conj(jax_vjp(conj(ct)))``: castwise's reverse mode uses
      PyTorch's convention, JAX's is its conjugate.

    Bool and integer arguments are inactive (closed-over constants) on both
    sides. Values are compared exactly for bool/integer arrays, otherwise with
    ``|got - want| <= atol + rtol * |want|``; by default ``rtol`` is the
    loosest ``PARITY_TOL`` entry among the arguments' and outputs' inexact
    dtypes and ``atol`` is ``rtol * max(1, max |want|)`` per output. ``seed``
    fixes the random tangents and cotangents.

    Raises ``AssertionError`` naming the mode, the output (or argument) and the
    error against the tolerance. JAX is imported only when this is called.
    """
    import jax

    unknown = [m for m in modes if m not in PARITY_MODES]
    if unknown:
        raise ValueError(f"check_against_jax: unknown mode(s) {unknown}; choose from {list(PARITY_MODES)}")
    leaves, in_tree = tree_flatten(tuple(args))
    arg_names = [str(i) for i in range(len(leaves))]
    if in_tree != tree_structure((0,) * len(args)):  # pytree arguments: compare functions of their leaves
        arg_names = [f"{p[1:].split(']', 1)[0]} leaf {p.split(']', 1)[1]}" for p in leaf_paths(tuple(args))[0]]
        f_ours, f_theirs = f_castwise, f_jax

        def f_castwise(*ls: Any) -> Any:
            return f_ours(*tree_unflatten(in_tree, ls))

        def f_jax(*ls: Any) -> Any:
            return f_theirs(*tree_unflatten(in_tree, ls))

        args = leaves
    xs = [x if isinstance(x, Tensor) else asarray(x) for x in args]
    arrays = [x.numpy() for x in xs]
    active = [i for i, x in enumerate(xs) if x.dtype.is_inexact]
    rng = np.random.default_rng(seed)
    promotion = "strict" if get_policy() == "jax-strict" else "standard"

    def jax_context() -> ExitStack:
        """x64 on, and JAX's promotion mode, for one ``with`` block."""
        stack = ExitStack()
        stack.enter_context(jax.enable_x64(True))
        stack.enter_context(jax.numpy_dtype_promotion(promotion))
        return stack

    def with_active(fn: Callable[..., Any], consts: Sequence[Any]) -> Callable[..., Any]:
        def closed(*act: Any) -> Any:
            full = list(consts)
            for i, a in zip(active, act, strict=True):
                full[i] = a
            return fn(*full)

        return closed

    ours_out, ours_tree = _flat_outputs(f_castwise(*xs), "castwise")
    with jax_context():
        jax_args = [jax.numpy.asarray(a) for a in arrays]
        theirs_out, theirs_tree = _flat_outputs(f_jax(*jax_args), "JAX")
        theirs_np = [np.asarray(o) for o in theirs_out]
    if len(ours_out) != len(theirs_out) or ours_tree != theirs_tree:
        seq_ours = " as a sequence" * (not ours_tree.is_leaf())
        seq_theirs = " as a sequence" * (not theirs_tree.is_leaf())
        raise AssertionError(
            f"check_against_jax: castwise returned {len(ours_out)} output(s){seq_ours} ({ours_tree}), "
            f"JAX returned {len(theirs_out)}{seq_theirs} ({theirs_tree})"
        )
    for i, (o, w) in enumerate(zip(ours_out, theirs_np, strict=True)):
        if not isinstance(o, Tensor):
            raise TypeError(f"check_against_jax: castwise output {i} is a {type(o).__name__}, not a Tensor")
        want_dtype = _castwise_dtype(w.dtype)
        if want_dtype is None or not _same_dtype(o.dtype, want_dtype):
            raise AssertionError(
                f"check_against_jax [primal] output {i} ({_describe(o.dtype, o.shape)}): dtype {o.dtype.name} "
                f"differs from JAX's {want_dtype.name if want_dtype else w.dtype}"
            )
    out_dtypes: list[DType] = [o.dtype for o in ours_out]
    tol = rtol if rtol is not None else parity_tolerance([x.dtype for x in xs] + out_dtypes)

    if "primal" in modes:
        for i, (o, w) in enumerate(zip(ours_out, theirs_np, strict=True)):
            _compare_values(f"check_against_jax [primal] output {i} ({_describe(o.dtype, o.shape)})",
                            o.numpy(), w, tol, atol)  # fmt: skip

    if not active or not ({"jvp", "vjp"} & set(modes)):
        return
    ours_f = with_active(f_castwise, xs)
    act_ours = [xs[i] for i in active]

    if "jvp" in modes:
        tangents = [_parity_random(xs[i].dtype, xs[i].shape, rng) for i in active]
        _, ours_t = jvp(ours_f, act_ours, [Tensor(t, xs[i].dtype) for t, i in zip(tangents, active, strict=True)])
        with jax_context():
            jf = with_active(f_jax, jax_args)
            _, theirs_t = jax.jvp(
                jf,
                tuple(jax_args[i] for i in active),
                tuple(jax.numpy.asarray(t) for t in tangents),
            )
            theirs_t_np = [np.asarray(t) for t in _flat_outputs(theirs_t, "JAX")[0]]
        for i, (o, t, w) in enumerate(zip(ours_out, tree_flatten(ours_t)[0], theirs_t_np, strict=True)):
            label = f"check_against_jax [jvp] tangent of output {i} ({_describe(o.dtype, o.shape)})"
            t_np = _as_numpy(t)
            if not o.dtype.is_inexact:
                if np.any(t_np.astype(np.float64) != 0):
                    raise AssertionError(f"{label}: a {o.dtype.name} output must have a zero tangent, got {t_np!r}")
                continue
            if isinstance(t, Tensor) and not _same_dtype(t.dtype, o.dtype):
                raise AssertionError(f"{label}: tangent dtype {t.dtype.name} differs from the output's")
            _compare_values(label, t_np, w, tol, atol)

    if "vjp" in modes:
        cts = [_parity_random(o.dtype, o.shape, rng) if o.dtype.is_inexact else None for o in ours_out]
        _, ours_vjp = vjp(ours_f, *act_ours)
        ours_ct_in = [Tensor(c, d) if c is not None else None for c, d in zip(cts, out_dtypes, strict=True)]
        ours_cts = ours_vjp(tree_unflatten(ours_tree, ours_ct_in))
        with jax_context():
            jf = with_active(f_jax, jax_args)
            _, theirs_vjp = jax.vjp(jf, *(jax_args[i] for i in active))
            jax_ct = [
                jax.numpy.asarray(np.conj(c) if c.dtype.kind == "c" else c)
                if c is not None
                else np.zeros(w.shape, dtype=jax.dtypes.float0)
                for c, w in zip(cts, theirs_np, strict=True)
            ]
            ct_tree = tree_unflatten(theirs_tree, jax_ct)
            theirs_cts = theirs_vjp(ct_tree)
            want_cts = [np.asarray(g) for g in theirs_cts]
        for k, (i, got) in enumerate(zip(active, ours_cts, strict=True)):
            x = xs[i]
            label = f"check_against_jax [vjp] cotangent of argument {arg_names[i]} ({_describe(x.dtype, x.shape)})"
            if got is None:
                raise AssertionError(f"{label}: castwise returned None for a {x.dtype.name} argument")
            if not _same_dtype(got.dtype, x.dtype) or got.shape != x.shape:
                raise AssertionError(
                    f"{label}: castwise cotangent is {_describe(got.dtype, got.shape)}, expected the argument's"
                )
            want = want_cts[k]
            want = np.conj(want) if want.dtype.kind == "c" else want
            _compare_values(label, got.numpy(), want, tol, atol)


def _castwise_dtype(np_dtype: np.dtype[Any]) -> DType | None:
    try:
        return dtype_of(np_dtype)
    except TypeError:
        return None


def _same_dtype(ours: DType, theirs: DType) -> bool:
    """Equal dtypes; ``float32r`` (no JAX twin, stored as float32) matches float32."""
    return ours is theirs or (ours.storage == theirs.storage and "float32r" in (ours.name, theirs.name))
