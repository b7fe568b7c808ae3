"""castwise tensors in the NumPy / JAX / PyTorch ecosystem: dtype equality, DLPack, jnp.asarray.

Every row is held against the library on the other side: NumPy's and JAX's dtypes, their
DLPack importers and exporters (bit for bit, and ``np.shares_memory`` for zero-copy), and
PyTorch's where it is installed (skipped otherwise). The trust rule of docs/tensor.md is
checked both ways: memory castwise hands out is read-only, memory it imports is never written.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import runtime as rt
from runtime.core import interop
from runtime.core.inplace import ReadOnlyTensorError

jax.config.update("jax_enable_x64", True)

DTYPES = list(rt.ALL_DTYPES)
IDS = [d.name for d in DTYPES]
#: what castwise's DLPack carries (everything but the sub-byte types and bcomplex32)
EXCHANGED = [d for d in DTYPES if d.bits >= 8 and d is not rt.bcomplex32]
REFUSED = [d for d in DTYPES if d not in EXCHANGED]


def _sample(d: rt.DType, n: int = 6) -> rt.Tensor:
    """Distinct, exactly representable values of ``d`` (0/1 for bool, small ints, halves)."""
    if d.kind == "bool":
        values = np.arange(n) % 2
    elif d.kind in ("int", "uint"):
        hi = int(ml_dtypes.iinfo(d.storage).max)
        values = np.arange(n) % min(hi + 1, 100)
    else:
        values = np.arange(n) % 4 * 0.5 + (0.5 if d is rt.float8_e8m0fnu else 0.0)
    return rt.asarray(np.asarray(values).astype(d.storage), dtype=d)


def _bits(a: object) -> bytes:
    return np.ascontiguousarray(np.asarray(a)).tobytes()


@functools.cache
def _jax_has(d: rt.DType) -> bool:
    """Whether JAX takes a NumPy array of ``d`` at all: the receiver's own limit, not castwise's."""
    try:
        return _bits(jnp.asarray(np.zeros(2, d.storage))) == _bits(np.zeros(2, d.storage))
    except Exception:  # JAX refuses the type (float6, complex32) or mishandles it (int1)
        return False


# -- dtype equality -------------------------------------------------------------------------------


@pytest.mark.parametrize("d", DTYPES, ids=IDS)
def test_dtype_equals_what_numpy_calls_it(d: rt.DType) -> None:
    storage = d.storage
    for other in (storage, storage.type, storage.name, str(storage), d.name, d.short):
        assert d == other and (d != other) is False, other
    assert np.dtype(d) == storage and d.dtype == storage
    assert np.zeros(3, dtype=d).dtype == storage
    assert np.arange(3).astype(d).dtype == storage
    assert np.dtype(storage) == d  # NumPy's side, through .dtype
    assert d == jnp.dtype(storage) if _jax_has(d) else True
    assert rt.asarray(np.zeros(2, dtype=d)).dtype is rt.dtype(storage)


@pytest.mark.parametrize("d", DTYPES, ids=IDS)
def test_dtype_differs_from_every_other_dtype(d: rt.DType) -> None:
    others = [e for e in DTYPES if e is not d and e.storage != d.storage]
    for e in others:
        assert d != e and d != e.storage and d != e.name
    assert d != None and d != 3 and d != 1.5 and d != "no-such-dtype"  # noqa: E711
    assert {d: 1}[d] == 1 and hash(d) == hash(rt.dtype(d.name))


def test_float32r_is_stored_as_float32_but_is_not_castwise_float32() -> None:
    assert rt.float32r != rt.float32 and rt.float32r == "float32r" and rt.float32r == "f32r"
    # NumPy decides np.dtype("float32") == float32r through .dtype; castwise agrees both ways
    assert rt.float32r == np.float32 and np.dtype("float32") == rt.float32r
    assert {rt.float32: "a", rt.float32r: "b"}[rt.float32r] == "b"


def test_user_code_branching_on_dtype_takes_the_numpy_branch() -> None:
    t = rt.asarray(np.ones(3, np.float32))
    assert t.dtype == np.float32 and t.dtype == "float32" and t.dtype == jnp.float32
    assert t.dtype in (np.float32, np.float64) and t.dtype != np.float64
    assert rt.asarray(np.ones(2, ml_dtypes.bfloat16)).dtype == ml_dtypes.bfloat16


# -- DLPack export ------------------------------------------------------------------------------------


def _numpy_exchanges(d: rt.DType) -> bool:
    return d.storage in interop._NUMPY_EXCHANGED


@pytest.mark.parametrize("d", [d for d in EXCHANGED if _numpy_exchanges(d)], ids=lambda d: d.name)
def test_numpy_from_dlpack_shares_read_only_memory(d: rt.DType) -> None:
    t = _sample(d)
    a = np.from_dlpack(t)
    assert np.shares_memory(a, t.numpy()) and not a.flags.writeable
    assert _bits(a) == _bits(t.numpy())
    with pytest.raises(ValueError, match="read-only"):
        a[0] = a[1]
    before = t._version
    t += t  # castwise's own write still goes through, and is counted
    assert t._version == before + 1


@pytest.mark.parametrize("d", EXCHANGED, ids=lambda d: d.name)
def test_jax_from_dlpack_round_trips_bit_for_bit(d: rt.DType) -> None:
    if not _jax_has(d):  # probed here, not at collection: every xdist worker collects
        pytest.skip(f"JAX has no {d.name}")
    t = _sample(d)
    j = jax.dlpack.from_dlpack(t)  # JAX asks for a legacy capsule: castwise hands it a copy
    assert j.dtype == d and j.shape == t.shape and _bits(j) == _bits(t.numpy())
    back = rt.from_dlpack(j)
    assert back.dtype is (rt.float32 if d is rt.float32r else d) and _bits(back.numpy()) == _bits(t.numpy())


@pytest.mark.parametrize("d", REFUSED, ids=lambda d: d.name)
def test_types_dlpack_cannot_describe_are_refused(d: rt.DType) -> None:
    with pytest.raises(BufferError, match=rf"__dlpack__: a {d.name}\[6\] tensor"):
        _sample(d).__dlpack__(max_version=(1, 0))


def test_dlpack_arguments() -> None:
    t = _sample(rt.float32)
    assert t.__dlpack_device__() == (1, 0) and t.device is rt.cpu and repr(rt.cpu) == "castwise.Device('cpu', id=0)"
    with pytest.raises(BufferError, match="legacy"):
        t.__dlpack__(copy=False)
    with pytest.raises(BufferError, match="CPU"):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    copied = np.from_dlpack(t, copy=True)
    assert not np.shares_memory(copied, t.numpy()) and copied.flags.writeable
    assert _bits(copied) == _bits(t.numpy())


# -- DLPack import --------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", EXCHANGED, ids=lambda d: d.name)
def test_from_dlpack_of_numpy_is_zero_copy_and_never_written(d: rt.DType) -> None:
    a = _sample(d).numpy().copy()  # the user's writable array
    t = rt.from_dlpack(a)
    assert t.dtype is rt.dtype(a.dtype) and np.shares_memory(t.numpy(), a) and _bits(t.numpy()) == _bits(a)
    with pytest.raises(ReadOnlyTensorError):
        t += t
    mine = rt.from_dlpack(a, copy=True)
    assert not np.shares_memory(mine.numpy(), a) and _bits(mine.numpy()) == _bits(a)
    mine += mine  # a copy of its own is writable


@pytest.mark.parametrize("d", EXCHANGED, ids=lambda d: d.name)
def test_from_dlpack_of_jax_keeps_dtype_and_bits(d: rt.DType) -> None:
    if not _jax_has(d):
        pytest.skip(f"JAX has no {d.name}")
    j = jnp.asarray(_sample(d).numpy())
    t = rt.from_dlpack(j)
    assert t.dtype is rt.dtype(j.dtype) and _bits(t.numpy()) == _bits(j)
    with pytest.raises(ReadOnlyTensorError):
        t += t  # a JAX buffer is immutable


def test_from_dlpack_refuses_what_has_no_dlpack() -> None:
    with pytest.raises(TypeError, match="from_dlpack: a list has no __dlpack__"):
        rt.from_dlpack([1, 2])
    with pytest.raises(BufferError, match="from_dlpack"):
        rt.from_dlpack(np.zeros(2, ml_dtypes.int4))
    t = _sample(rt.float32)
    assert rt.from_dlpack(t) is t


# -- jax.numpy and NumPy functions on tensors ---------------------------------------------------------


@pytest.mark.parametrize("d", DTYPES, ids=IDS)
def test_jnp_asarray_round_trips_bit_for_bit(d: rt.DType) -> None:
    if not _jax_has(d):
        pytest.skip(f"JAX has no {d.name}")
    t = _sample(d)
    j = jnp.asarray(t)
    assert j.dtype == d and _bits(j) == _bits(t.numpy())
    back = rt.asarray(j)
    assert _bits(back.numpy()) == _bits(t.numpy())


_REGISTERED_SCRIPT = """
import jax, jax.numpy as jnp, numpy as np
import runtime as rt
jax.config.update("jax_enable_x64", True)
rt.register_with_jax()
rt.register_with_jax()  # idempotent
x = np.linspace(-2.0, 2.0, 7)
t = rt.asarray(x)
np.testing.assert_array_equal(np.asarray(jnp.sin(t)), np.asarray(jnp.sin(x)))
np.testing.assert_array_equal(np.asarray(jax.jit(lambda a: a * 2 + 1)(t)), x * 2 + 1)
np.testing.assert_array_equal(np.asarray(jax.grad(lambda a: jnp.sum(a**2))(t)), 2 * x)
leaves = jax.tree_util.tree_leaves({"w": t})
assert len(leaves) == 1 and np.shares_memory(leaves[0], t.numpy())
rebuilt = jax.tree_util.tree_map(lambda a: a, {"w": t})["w"]
assert isinstance(rebuilt, rt.Tensor) and rebuilt.dtype is t.dtype
print("ok")
"""


def test_jitted_jax_functions_take_tensors_once_registered() -> None:
    """``jnp.sin(t)``, ``jax.jit``, ``jax.grad`` after ``rt.register_with_jax()``; in a fresh
    interpreter, since the registration is for the life of the process."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", _REGISTERED_SCRIPT], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_unjitted_jax_functions_take_tensors_without_registration() -> None:
    t = rt.asarray(np.arange(4.0))
    assert not interop._JAX_REGISTERED
    np.testing.assert_array_equal(np.asarray(jnp.asarray(t) + 1), np.arange(4.0) + 1)


@pytest.mark.parametrize(
    "name, call",
    [
        ("max", np.max), ("min", np.min), ("sum", np.sum), ("prod", np.prod), ("mean", np.mean),
        ("std", np.std), ("var", np.var), ("argmax", np.argmax), ("argmin", np.argmin),
        ("any", np.any), ("all", np.all), ("cumsum", np.cumsum), ("cumprod", np.cumprod),
        ("clip", lambda a: np.clip(a, 0.5, 2.0)), ("transpose", np.transpose),
        ("max-axis", lambda a: np.max(a, axis=1, keepdims=True)),
    ],
)  # fmt: skip
def test_numpy_functions_on_tensors_match_numpy(name: str, call: object) -> None:
    x = np.arange(1.0, 7.0).reshape(2, 3) / 2
    got = call(rt.asarray(x))  # type: ignore[operator]
    np.testing.assert_allclose(np.asarray(got), call(x), rtol=1e-15)  # type: ignore[operator]


def test_numpy_out_argument_is_refused_by_name() -> None:
    t = rt.asarray(np.ones(3))
    with pytest.raises(TypeError, match=r"^max: out= is not supported"):
        np.max(t, out=np.zeros(()))


def test_torch_takes_tensors() -> None:
    torch = pytest.importorskip("torch")
    for d in (rt.float32, rt.int64, rt.bool_, rt.bfloat16, rt.float16, rt.uint8):
        t = _sample(d)
        x = torch.from_dlpack(t)
        back = rt.from_dlpack(x)
        assert back.dtype is d and _bits(back.numpy()) == _bits(t.numpy())
        assert torch.as_tensor(t).shape == tuple(t.shape)
    assert torch.as_tensor(rt.asarray(np.float32(2.5))).item() == 2.5
