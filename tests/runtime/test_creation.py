"""Array creation (runtime.numpy.creation, docs/tensor.md "Creating arrays") against its oracles.

- every function x the policies jax (jax.numpy, x64), numpy (NumPy) and torch
  (PyTorch, when installed) x several dtypes: the dtype, shape and values (bit for bit;
  jax.numpy's ``linspace`` to a few ulps, see ``test_rows``);
- gradients of ``tril``/``triu``/``diag``/``diagonal`` (and ``linspace`` in its bounds)
  against ``jax.grad`` of the jax.numpy function;
- every function taking an array under ``autodiff.vmap``, against ``jax.vmap``;
- a recorded graph holds only ordinary ops of the vocabulary and replays to the eager value;
- the errors: each names the function, the operands and the policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autodiff
import runtime as rt
from runtime.core import ops
from runtime.numpy import creation

jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(2026)
FLOATS = ["float32", "float64", "float16", "bfloat16"]
ALL = [*FLOATS, "int32", "complex64", "bool"]


def np_dtype(name: str | None) -> Any:
    if name is None:
        return None
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


def data(shape: tuple[int, ...], name: str) -> np.ndarray:
    """Random values of dtype ``name``, with a -0.0 and zeros among them (a masking bug shows)."""
    if name == "bool":
        return RNG.random(shape) > 0.5
    if name.startswith("int"):
        return RNG.integers(-5, 6, size=shape).astype(name)
    values = RNG.standard_normal(shape) + (1j * RNG.standard_normal(shape) if name.startswith("complex") else 0)
    out = np.asarray(values).astype(np_dtype(name))
    if out.size:
        out.reshape(-1)[0] = -0.0
    return out


class Row(NamedTuple):
    """One call: ``run(m, d)`` with ``m`` the creation module, ``np`` or ``jnp`` (same API) and
    ``d`` the dtype argument; ``torch_run(torch, d)`` the PyTorch spelling (None: no such call);
    ``jax_ulps``: jax.numpy's values are compared to that many ulps instead of bit for bit;
    ``dtype``: the dtype argument's name (None: the default)."""

    id: str
    run: Callable[[Any, Any], Any]
    torch_run: Callable[[Any, Any], Any] | None = None
    jax_ulps: int = 0
    dtype: str | None = None
    jax: bool = True  # also a jax.numpy row (each jax.numpy call compiles: a sample where NumPy says the same)


DT = object()  # stands for the row's dtype argument in a call's keywords


def _call(name: str, *args: Any, **kwargs: Any) -> Callable[[Any, Any], Any]:
    """``m.name(*args, **kwargs)`` for ``m`` in (creation, np, jnp): one spelling for all three."""

    def run(m: Any, d: Any) -> Any:
        return getattr(m, name)(*args, **{k: d if v is DT else v for k, v in kwargs.items()})

    return run


def _torch_call(name: str, *args: Any, **kwargs: Any) -> Callable[[Any, Any], Any]:
    """The same call in PyTorch (NumPy array arguments become torch tensors)."""

    def run(torch: Any, d: Any) -> Any:
        targs = [_torch(torch, a) if isinstance(a, np.ndarray) else a for a in args]
        return getattr(torch, name)(*targs, **{k: d if v is DT else v for k, v in kwargs.items()})

    return run


def _row(
    row_id: str, name: str, *args: Any, dtype: str | None = None, dated: bool = False, torch: str | None = "",
    ulps: int = 0, jax: bool = True, **kwargs: Any,
) -> Row:  # fmt: skip
    """A row calling ``name`` (with ``dtype=`` the row's dtype when ``dated``); ``torch``: PyTorch's
    name when it differs, None when PyTorch has no such call."""
    if dated:
        kwargs["dtype"] = DT
    torch_kwargs = {k: v for k, v in kwargs.items() if k != "endpoint"}  # torch.linspace has no endpoint
    torch_run = None if torch is None else _torch_call(torch or name, *args, **torch_kwargs)
    return Row(row_id, _call(name, *args, **kwargs), torch_run, ulps, dtype, jax)


def _rows() -> list[Row]:
    rows: list[Row] = []
    for args in [(5,), (0.5, 3), (1, 10, 3), (0.1, 1.0, 0.3), (10, 0, -2.5), (-3, 7), (3, 1)]:
        real = any(isinstance(a, float) for a in args)
        for d in [None, *FLOATS, *([] if real else ["int32", "int8"])]:
            rows.append(_row(f"arange{args}-{d}", "arange", *args, dtype=d, dated=True))
    for bounds in [(0, 1), (0.1, 7.3), (-2, 5), (1e-3, 1.0)]:
        for num in [0, 1, 2, 7, 50] if bounds == (0.1, 7.3) else [1, 7, 50]:
            for endpoint in [True, False]:
                every = bounds == (0.1, 7.3)
                for d in [None, "float32", "float16", "bfloat16", "int32", "complex64"] if every else [None, "int32"]:
                    rows.append(_row(
                        f"linspace{bounds}-{num}-{endpoint}-{d}", "linspace", *bounds, num, dtype=d,
                        torch="" if endpoint else None,
                        ulps=4,  # XLA rewrites i / div to i * (1 / div) and contracts to FMA
                        endpoint=endpoint, dated=True,
                    ))  # fmt: skip
    for nmk in [(3,), (3, 5, 1), (4, 2, -1), (2, 3, 7), (0,)]:
        for d in [None, *ALL]:
            sample = d in (None, "bfloat16", "int32", "complex64", "bool")
            rows.append(_row(f"eye{nmk}-{d}", "eye", *nmk, dtype=d, torch="" if len(nmk) < 3 else None, jax=sample,
                             dated=True))  # fmt: skip
    for d in [None, *ALL]:
        rows.append(_row(f"identity(3)-{d}", "identity", 3, dtype=d, torch="eye", dated=True))
    for name in ALL:
        x = data((2, 3), name)
        for fill in (2.5, -3):
            for d in [None, "int32"]:
                rows.append(_row(f"full_like({name},{fill})-{d}", "full_like", x, fill, dtype=d, dated=True))
        for fn in ("zeros_like", "ones_like"):
            for d in [None, "bfloat16", "complex64"]:
                rows.append(_row(f"{fn}({name})-{d}", fn, x, dtype=d, dated=True))
        wide = name == "float64"  # every offset and axis pair in one dtype, a sample in the others
        for shape in [(4, 4), (3, 5), (2, 5, 3)]:
            x = data(shape, name)
            for k in (-7, -1, 0, 2, 9) if wide else (-1, 2):
                sample = (wide and k in (-1, 9)) or (shape == (2, 5, 3) and k == 2)
                for fn in ("tril", "triu"):
                    rows.append(_row(f"{fn}({name}{shape},{k})", fn, x, k, jax=sample))
                for a1, a2 in [(0, 1), (1, 0), (-1, 0), (0, 2), (2, 1)] if wide else [(0, 1), (2, 1)]:
                    if max(a1, a2) < len(shape):
                        rows.append(_row(f"diagonal({name}{shape},{k},{a1},{a2})", "diagonal", x, k, a1, a2,
                                         jax=sample))  # fmt: skip
                if len(shape) == 2:
                    rows.append(_row(f"diag({name}{shape},{k})", "diag", x, k, jax=sample))
        for n in (0, 1, 4) if wide else (3,):
            v = data((n,), name)
            for k in (-2, 0, 1) if wide else (-1, 1):
                rows.append(_row(f"diag({name}[{n}],{k})", "diag", v, k))
    xs = [data((3,), "float32"), data((2,), "int32"), data((4,), "bfloat16")]
    for count in (1, 2, 3):
        for indexing in ("xy", "ij"):
            rows.append(_row(f"meshgrid{count}-{indexing}", "meshgrid", *xs[:count], indexing=indexing))
    return rows


ROWS = _rows()
JAX_ROWS = [r for r in ROWS if r.jax]


def _torch(torch: Any, x: np.ndarray) -> Any:
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.array(x))


def _as_numpy(value: Any) -> np.ndarray:
    if isinstance(value, rt.Tensor):
        return value.numpy()
    if hasattr(value, "detach"):  # a torch tensor
        name = str(value.dtype).removeprefix("torch.")
        if name == "bfloat16":
            return value.float().numpy().astype(ml_dtypes.bfloat16)
        return value.numpy()
    return np.asarray(value)


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    if got.dtype == bool:
        return bool(np.array_equal(got, want))
    unsigned = np.dtype(f"u{got.dtype.itemsize}") if got.dtype.kind != "c" else np.dtype(f"u{got.dtype.itemsize // 2}")
    return bool(np.array_equal(np.ascontiguousarray(got).view(unsigned), np.ascontiguousarray(want).view(unsigned)))


def _within_ulps(got: np.ndarray, want: np.ndarray, ulps: int) -> bool:
    wide = np.complex128 if got.dtype.kind == "c" else np.float64
    g, w = got.astype(wide), want.astype(wide)
    eps = float(ml_dtypes.finfo(got.real.dtype).eps) if got.dtype.kind in "fcV" else 0.0
    scale = np.max(np.abs(w), initial=0.0)  # the bounds' scale: a value near zero cancels
    return bool(np.all(np.abs(g - w) <= ulps * eps * scale))


def _check(outs: Any, wants: Any, ulps: int = 0) -> None:
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    wants = list(wants) if isinstance(wants, (list, tuple)) else [wants]
    assert len(outs) == len(wants)
    for out, want in zip(outs, wants, strict=True):
        got, ref = _as_numpy(out), _as_numpy(want)
        assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
        assert got.shape == ref.shape, (got.shape, ref.shape)
        if ulps and got.dtype.kind in "iu":  # the floor of a value an ulp off
            assert np.all(np.abs(got.astype(np.int64) - ref.astype(np.int64)) <= 1), (got, ref)
        elif ulps and (got.dtype.kind in "fc" or got.dtype == ml_dtypes.bfloat16):
            assert _within_ulps(got, ref, ulps), (got, ref)
            assert got.size < 2 or _same_bits(got[:1], ref[:1])  # the start is exact
        else:
            assert _same_bits(got, ref), (got, ref)


def _compare(row: Row, policy: str, lib: Any) -> None:
    want = row.run(lib, np_dtype(row.dtype))
    with rt.policy(policy):
        got = row.run(creation, np_dtype(row.dtype))
    _check(got, want, row.jax_ulps if policy == "jax" else 0)
    if policy == "jax":  # weak types as jax.numpy's (a strong result for every creation call)
        pairs = zip(got if isinstance(got, list) else [got], want if isinstance(want, list) else [want], strict=True)
        for g, w in pairs:
            assert g.weak == w.weak_type


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_rows_numpy(row: Row) -> None:
    """dtype, shape and values under the numpy policy against NumPy: the same call."""
    _compare(row, "numpy", np)


@pytest.mark.parametrize("row", JAX_ROWS, ids=[r.id for r in JAX_ROWS])
def test_rows_jax(row: Row) -> None:
    """dtype, shape and values under the jax policy against jax.numpy with x64."""
    _compare(row, "jax", jnp)


def test_rows_torch() -> None:
    """Every row with a PyTorch spelling, under the torch policy, against PyTorch (one test:
    PyTorch is not installed everywhere)."""
    torch = pytest.importorskip("torch")
    for row in ROWS:
        if row.torch_run is None:
            continue
        try:
            want = row.torch_run(torch, None if row.dtype is None else getattr(torch, row.dtype))
        except RuntimeError:  # PyTorch refuses the call (arange(3, 1), a mixed meshgrid): so does the torch policy
            with rt.policy("torch"), pytest.raises((rt.ShapeError, rt.OpTypeError)):
                row.run(creation, np_dtype(row.dtype))
            continue
        with rt.policy("torch"):
            got = row.run(creation, np_dtype(row.dtype))
        try:
            # PyTorch's vectorised linspace adds the step lane by lane (its bits depend on the SIMD width)
            _check(got, want, row.jax_ulps)
        except AssertionError as err:
            raise AssertionError(f"{row.id}: {err}") from None


# -- defaults the brief fixes per library, without the oracle libraries -----------------------


@pytest.mark.parametrize(
    ("policy", "call", "want"),
    [
        ("jax", lambda: creation.arange(5), rt.int64),
        ("jax", lambda: creation.arange(0.5, 3), rt.float64),
        ("jax", lambda: creation.linspace(0, 1, 3), rt.float64),
        ("numpy", lambda: creation.eye(2), rt.float64),
        ("torch", lambda: creation.arange(5), rt.int64),
        ("torch", lambda: creation.arange(0.5, 3), rt.float32),
        ("torch", lambda: creation.linspace(0, 1, 3), rt.float32),
        ("torch", lambda: creation.eye(2), rt.float32),
        ("neuron", lambda: creation.eye(2), rt.float32),
        ("neuron", lambda: creation.arange(5), rt.int32),
    ],
)
def test_default_dtypes_come_from_the_policy(policy: str, call: Callable[[], rt.Tensor], want: rt.DType) -> None:
    with rt.policy(policy):
        assert call().dtype is want


SMOKE: list[tuple[str, Callable[[Any], Any]]] = [
    ("arange", lambda m: m.arange(1, 10, 3)),
    ("arange-float", lambda m: m.arange(0.5, 3)),
    ("linspace", lambda m: m.linspace(0, 1, 5)),
    ("linspace-int", lambda m: m.linspace(0, 10, 6, dtype=np.int64)),
    ("eye", lambda m: m.eye(3, 4, 1)),
    ("full_like", lambda m: m.full_like(np.ones((2, 2), np.float32), 2.5)),
    ("tril", lambda m: m.tril(np.arange(12, dtype=np.float32).reshape(3, 4), 1)),
    ("diag", lambda m: m.diag(np.arange(3, dtype=np.int64), -1)),
    ("diagonal", lambda m: m.diagonal(np.arange(24, dtype=np.float32).reshape(2, 3, 4), 1, 2, 1)),
    ("meshgrid", lambda m: m.meshgrid(np.arange(3, dtype=np.float32), np.arange(2, dtype=np.float32))[0]),
]


@pytest.mark.parametrize("policy", ["torch", "kael"])
def test_torch_policies_refuse_a_mixed_meshgrid(policy: str) -> None:
    # torch.meshgrid: "meshgrid expects all tensors to have the same dtype" (jnp and NumPy keep each dtype)
    with rt.policy(policy), pytest.raises(rt.OpTypeError, match=r"meshgrid: .*f32\[3\], xs\[1\]=i64\[2\].*policy"):
        creation.meshgrid(np.arange(3, dtype=np.float32), np.arange(2, dtype=np.int64))


@pytest.mark.parametrize("policy", sorted(rt.policies()))
def test_every_policy_creates_in_its_own_dtypes(policy: str) -> None:
    """Under every registered policy each function runs, stays within the policy's dtypes and
    gives NumPy's values (``strict``, which converts no integer implicitly, included)."""
    for name, f in SMOKE:
        with rt.policy(policy):
            got = f(creation)
            assert got.dtype in rt.get_policy_object(policy).dtypes, (name, got.dtype)
        np.testing.assert_allclose(got.numpy().astype(np.float64), f(np).astype(np.float64), rtol=1e-6, err_msg=name)


def test_a_one_value_range_never_stores_its_second_value() -> None:
    with rt.policy("numpy"):
        _check(creation.arange(120, 127, 10, dtype=np.int8), np.arange(120, 127, 10, dtype=np.int8))


def test_full_like_keeps_a_weak_operand_weak_as_jax_numpy() -> None:
    with rt.policy("jax"):
        weak = rt.asarray(2.0)
        assert weak.weak and creation.zeros_like(weak).weak and not creation.zeros_like(weak, rt.float32).weak
        assert jax.numpy.zeros_like(2.0).weak_type  # the oracle's behaviour this mirrors


# -- gradients -----------------------------------------------------------------------------------

GRAD_CASES: list[tuple[str, Callable[[Any, Any], Any], tuple[int, ...]]] = [
    ("tril-1", lambda m, x: m.tril(x, -1), (3, 4)),
    ("tril2-batched", lambda m, x: m.tril(x, 2), (2, 3, 4)),
    ("triu0", lambda m, x: m.triu(x), (4, 3)),
    ("triu-2-batched", lambda m, x: m.triu(x, -2), (2, 4, 4)),
    ("diag-vector+1", lambda m, x: m.diag(x, 1), (4,)),
    ("diag-vector-2", lambda m, x: m.diag(x, -2), (3,)),
    ("diag-matrix-1", lambda m, x: m.diag(x, -1), (4, 3)),
    ("diagonal", lambda m, x: m.diagonal(x), (3, 5)),
    ("diagonal-axes", lambda m, x: m.diagonal(x, 1, 2, 0), (3, 2, 4)),
    ("diagonal-neg", lambda m, x: m.diagonal(x, -1, -1, -2), (2, 4, 3)),
    ("linspace-bounds", lambda m, x: m.linspace(x[0], x[1], 6), (2,)),
]


@pytest.mark.parametrize(("name", "f", "shape"), GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradient_matches_jax(name: str, f: Callable[[Any, Any], Any], shape: tuple[int, ...]) -> None:
    x = RNG.standard_normal(shape)
    out_shape = np.shape(f(np, x))
    w = RNG.standard_normal(out_shape)

    def ours(t: rt.Tensor) -> rt.Tensor:
        y = f(creation, t) * rt.asarray(w)
        return rt.lax.reduce_sum(y, tuple(range(y.ndim)))

    def theirs(t: Any) -> Any:
        return jnp.sum(f(jnp, t) * w)

    got = autodiff.grad(ours)(rt.asarray(x)).numpy()
    np.testing.assert_allclose(got, np.asarray(jax.grad(theirs)(x)), rtol=1e-12, atol=1e-12)


# -- vmap ------------------------------------------------------------------------------------------

VMAP_CASES: list[tuple[str, Callable[[Any, Any], Any], tuple[int, ...]]] = [
    ("zeros_like", lambda m, x: m.zeros_like(x), (3,)),
    ("ones_like", lambda m, x: m.ones_like(x, dtype=np.float32), (2, 2)),
    ("full_like", lambda m, x: m.full_like(x, 2.5), (3,)),
    ("tril", lambda m, x: m.tril(x, 1), (3, 4)),
    ("triu", lambda m, x: m.triu(x, -1), (4, 3)),
    ("diag-vector", lambda m, x: m.diag(x, -1), (3,)),
    ("diag-matrix", lambda m, x: m.diag(x, 1), (3, 4)),
    ("diagonal", lambda m, x: m.diagonal(x, 0, 1, 0), (2, 4, 3)),
    ("meshgrid", lambda m, x: m.meshgrid(x, x[:2], indexing="xy")[0], (3,)),
    ("linspace", lambda m, x: m.linspace(x[0], x[1], 5), (2,)),
]


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize(("name", "f", "shape"), VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap_matches_jax(name: str, f: Callable[[Any, Any], Any], shape: tuple[int, ...], axis: int) -> None:
    batched = list(shape)
    batched.insert(axis, 3)
    xs = RNG.standard_normal(batched)
    with rt.policy("jax"):
        got = autodiff.vmap(lambda t: f(creation, t), in_axes=axis)(rt.asarray(xs))
    want = jax.vmap(lambda t: f(jnp, t), in_axes=axis)(xs)
    assert got.dtype.name == str(want.dtype) and got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-15, atol=1e-15)


# -- recorded graphs hold ordinary ops -------------------------------------------------------------

GRAPH_CASES: list[tuple[str, Callable[[rt.Tensor], Any], tuple[int, ...]]] = [
    ("tril", lambda x: creation.tril(x, 1), (2, 3, 3)),
    ("triu", lambda x: creation.triu(x), (3, 4)),
    ("diag", lambda x: creation.diag(x, -1), (4,)),
    ("diag2", lambda x: creation.diag(x), (3, 4)),
    ("diagonal", lambda x: creation.diagonal(x, 1, 2, 0), (3, 2, 4)),
    ("full_like", lambda x: creation.full_like(x, x[0, 0]), (2, 3)),
    ("meshgrid", lambda x: creation.meshgrid(x, x, indexing="ij"), (3,)),
    ("linspace", lambda x: creation.linspace(x[0], x[1], 7, endpoint=False), (2,)),
]


@pytest.mark.parametrize("policy", ["jax", "numpy"])
@pytest.mark.parametrize(("name", "f", "shape"), GRAPH_CASES, ids=[c[0] for c in GRAPH_CASES])
def test_recorded_graph_holds_only_ordinary_ops(name: str, f: Callable[..., Any], shape: tuple[int, ...],
                                                policy: str) -> None:  # fmt: skip
    x = RNG.standard_normal(shape)
    with rt.policy(policy):
        graph = rt.trace(f, x)
        eager = f(rt.asarray(x))
        replay = graph(x)
    assert graph.eqns, "a tracked operand is recorded"
    for eqn in graph.eqns:
        assert ops.OPS.get(eqn.op.name) is eqn.op, eqn.op.name
    eager = list(eager) if isinstance(eager, (list, tuple)) else [eager]
    for r, e in zip(replay, eager, strict=True):
        assert _same_bits(r.numpy(), e.numpy())


def test_untracked_creation_records_nothing() -> None:
    for out in (creation.eye(3), creation.arange(4), creation.linspace(0, 1, 4), creation.tril(np.ones((2, 2)))):
        assert out.node is None and not out.requires_grad


# -- errors ------------------------------------------------------------------------------------------

ERRORS: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    ("arange step 0", lambda: creation.arange(0, 5, 0), rt.ShapeError, "step must not be zero"),
    ("arange complex", lambda: creation.arange(1j), rt.OpTypeError, "complex"),
    ("arange array", lambda: creation.arange(np.ones(2)), rt.ShapeError, "scalar"),
    ("arange nan", lambda: creation.arange(0, float("nan")), rt.ShapeError, "not finite"),
    ("arange object dtype", lambda: creation.arange(3, dtype=object), rt.OpTypeError, "dtype"),
    ("linspace num float", lambda: creation.linspace(0, 1, 2.5), rt.OpTypeError, "num must be an integer"),
    ("linspace num negative", lambda: creation.linspace(0, 1, -1), rt.ShapeError, "num must be non-negative"),
    ("linspace array bound", lambda: creation.linspace(np.zeros(2), 1), rt.ShapeError, "start must be a scalar"),
    ("eye negative", lambda: creation.eye(-1), rt.ShapeError, "n must be non-negative"),
    ("eye float", lambda: creation.eye(2.5), rt.OpTypeError, "n must be an integer"),
    ("eye k float", lambda: creation.eye(2, k=0.5), rt.OpTypeError, "k must be an integer"),
    ("identity negative", lambda: creation.identity(-2), rt.ShapeError, "n must be non-negative"),
    ("tril 1-D", lambda: creation.tril(np.ones(3)), rt.ShapeError, "f64[3]"),
    ("triu 0-D", lambda: creation.triu(np.float32(1)), rt.ShapeError, "f32[]"),
    (
        "triu k float",
        lambda: creation.triu(np.ones((2, 2)), 1.5),  # type: ignore[arg-type]
        rt.OpTypeError,
        "k must be an integer",
    ),
    ("diagonal same axes", lambda: creation.diagonal(np.ones((2, 2)), 0, 1, 1), rt.ShapeError, "different"),
    ("diagonal axis range", lambda: creation.diagonal(np.ones((2, 2)), 0, 0, 2), rt.ShapeError, "out of range"),
    ("diagonal 1-D", lambda: creation.diagonal(np.ones(2, np.int32)), rt.ShapeError, "i32[2]"),
    ("diag 3-D", lambda: creation.diag(np.ones((2, 2, 2))), rt.ShapeError, "f64[2, 2, 2]"),
    ("zeros_like object dtype", lambda: creation.zeros_like(np.ones(2), dtype=object), rt.OpTypeError, "dtype"),
    ("full_like array fill", lambda: creation.full_like(np.ones(2), np.ones(2)), rt.ShapeError, "fill_value"),
    ("meshgrid indexing", lambda: creation.meshgrid(np.ones(2), indexing="ab"), ValueError, "indexing"),
]


@pytest.mark.parametrize("policy", ["jax", "numpy"])
@pytest.mark.parametrize(("name", "call", "cls", "text"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_name_function_operands_and_policy(name: str, call: Callable[[], Any], cls: type[Exception],
                                                  text: str, policy: str) -> None:  # fmt: skip
    with rt.policy(policy), pytest.raises(cls) as info:
        call()
    message = str(info.value)
    function = name.split()[0]
    assert message.startswith(f"{function}: "), message
    assert text in message and f"policy {policy!r}" in message and "operands" in message, message


def test_meshgrid_refuses_2d_under_jax_and_flattens_under_numpy() -> None:
    grid = np.ones((2, 2))
    with rt.policy("jax"), pytest.raises(rt.ShapeError, match="meshgrid: takes 1-D arrays"):
        creation.meshgrid(grid, np.ones(3))
    with pytest.raises(ValueError):
        jnp.meshgrid(grid, np.ones(3))  # the oracle refuses too
    with rt.policy("numpy"):
        _check(creation.meshgrid(grid, np.ones(3)), np.meshgrid(grid, np.ones(3)))


# -- properties ------------------------------------------------------------------------------------

_BOUND = st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False) | st.integers(-1000, 1000)


@settings(max_examples=60, deadline=None)
@given(start=_BOUND, length=st.integers(0, 40), step=st.floats(0.01, 50) | st.integers(1, 9),
       sign=st.sampled_from([1, -1]), dtype=st.sampled_from([None, "float32", "float16", "bfloat16"]))  # fmt: skip
def test_arange_is_numpys_to_the_bit(start: Any, length: int, step: Any, sign: int, dtype: str | None) -> None:
    """Random ranges under the numpy policy: NumPy's length and its ``fill`` arithmetic."""
    step = step * sign
    stop = start + step * length
    d = np_dtype(dtype)
    with rt.policy("numpy"):
        got = creation.arange(start, stop, step, dtype=d)
    _check(got, np.arange(start, stop, step, dtype=d))


@settings(max_examples=25, deadline=None)
@given(start=_BOUND, stop=_BOUND, num=st.integers(0, 30), endpoint=st.booleans(),
       dtype=st.sampled_from([None, "float32", "float16", "int32"]))  # fmt: skip
def test_linspace_is_numpys_to_the_bit(start: Any, stop: Any, num: int, endpoint: bool, dtype: str | None) -> None:
    d = np_dtype(dtype)
    with rt.policy("numpy"):
        got = creation.linspace(start, stop, num, endpoint=endpoint, dtype=d)
    _check(got, np.linspace(start, stop, num, endpoint=endpoint, dtype=d))


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=4), k=st.integers(-6, 6))
def test_tril_and_triu_split_a_matrix(shape: list[int], k: int) -> None:
    """``tril(x, k) + triu(x, k + 1) == x`` and ``diagonal(x, k)`` is what ``tril(x, k)`` keeps off
    ``tril(x, k - 1)``, on random batched shapes."""
    x = rt.asarray(RNG.standard_normal(shape))
    np.testing.assert_array_equal((creation.tril(x, k) + creation.triu(x, k + 1)).numpy(), x.numpy())
    kept = (creation.tril(x, k) - creation.tril(x, k - 1)).numpy()
    np.testing.assert_array_equal(creation.diagonal(x, k, -2, -1).numpy(), np.diagonal(kept, k, -2, -1))
