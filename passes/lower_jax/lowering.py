"""The driver: ``lower_to_jax`` and ``export_stablehlo``, and the graph checks around them.

``lower_to_jax`` interprets a graph equation by equation with the rules of ``LOWERINGS`` (filled by
the family modules, all imported by ``passes.lower_jax``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from passes._util import eqn_text
from passes.lower_jax._common import LOWERINGS, X64_DTYPES, LoweringError, with_weak_type, x64_enabled
from runtime.core.dtypes import DType
from runtime.core.graph import Eqn, Graph, GraphError, Var

# -- the driver -------------------------------------------------------------------------------


def graph_dtypes(graph: Graph) -> set[DType]:
    """Every dtype a value of ``graph`` has (inputs, constants, equation operands and results)."""
    found = {v.dtype for v in graph.inputs} | {v.dtype for v in graph.consts}
    for eqn in graph.eqns:
        found.update(v.dtype for v in eqn.inputs)
        found.update(v.dtype for v in eqn.outputs)
    return found


def needs_x64(graph: Graph) -> bool:
    """Whether lowering ``graph`` needs ``jax_enable_x64`` (a 64-bit integer or float, or complex128)."""
    return bool(graph_dtypes(graph) & X64_DTYPES)


@functools.cache
def jax_supports(dtype: DType) -> bool:
    """Whether this JAX/XLA build can hold arrays of ``dtype`` (it lacks the float6 formats, for one)."""
    import jax

    try:
        jax.device_put(np.zeros((), dtype.storage))
    except Exception:  # XLA reports an unknown element type in several ways
        return False
    return True


def _keep_weak(var: Var, value: Any) -> Any:
    """The lowered value with the graph's weak flag (``Var.weak``): inputs and constants
    are marked, and a rule written with several lax ops keeps the flag its op has."""
    from jax._src.dtypes import is_weakly_typed

    if is_weakly_typed(value) == var.weak:
        return value
    return with_weak_type(value, var.weak)


def _check_aval(graph: Graph, eqn: Eqn, var: Var, value: Any) -> None:
    got_dtype, got_shape = np.dtype(value.dtype), tuple(value.shape)
    if got_dtype != var.dtype.storage or got_shape != var.shape:
        raise LoweringError(
            f"lax produced {got_dtype}{list(got_shape)} where the graph records {var.type_str()} "
            f"(storage {var.dtype.storage}): castwise's shape rule and jax.lax disagree\n"
            f"    {eqn_text(graph, eqn)}"
        )


def _check_input(var: Var, value: Any, index: int) -> Any:
    from runtime.core.tensor import Tensor

    if isinstance(value, Tensor):
        if value.dtype is not var.dtype:
            raise GraphError(f"input {index} {var.type_str()} got {value.dtype.short}{list(value.shape)}")
        value = value.numpy()
    if not hasattr(value, "dtype") or not hasattr(value, "shape"):
        value = np.asarray(value)
    if np.dtype(value.dtype) != var.dtype.storage or tuple(value.shape) != var.shape:
        raise GraphError(
            f"input {index} {var.type_str()} got {np.dtype(value.dtype)}{list(value.shape)} "
            f"(expected storage {var.dtype.storage})"
        )
    return value


def _interpret(graph: Graph, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    if len(args) != len(graph.inputs):
        raise GraphError(f"graph takes {len(graph.inputs)} inputs, got {len(args)}")
    env: dict[int, Any] = {}
    for i, (var, arg) in enumerate(zip(graph.inputs, args, strict=True)):
        env[id(var)] = _check_input(var, arg, i)
        if var.weak:
            env[id(var)] = with_weak_type(env[id(var)], True)
    for var, value in zip(graph.consts, consts, strict=True):
        env[id(var)] = _keep_weak(var, value.materialize() if isinstance(value, _Fill) else value)
    for eqn in graph.eqns:
        try:
            operands = [env[id(v)] for v in eqn.inputs]
        except KeyError:
            raise GraphError(
                f"{eqn.op.name}: an input is used before it is defined\n    {eqn_text(graph, eqn)}"
            ) from None
        rule = LOWERINGS.get(eqn.op.name)
        if rule is None:
            raise NotImplementedError(f"no JAX lowering for op {eqn.op.name!r}")
        try:
            outs = rule(eqn, *operands)
        except Exception as err:
            err.add_note(f"while lowering to jax.lax: {eqn_text(graph, eqn)}")
            raise
        out_vars = eqn.outputs
        if len(outs) != len(out_vars):
            raise LoweringError(f"{eqn.op.name}: lowering gave {len(outs)} outputs for {len(out_vars)}")
        for var, value in zip(out_vars, outs, strict=True):
            _check_aval(graph, eqn, var, value)
            env[id(var)] = _keep_weak(var, value)
    return [env[id(v)] for v in graph.outputs]


def uniform_value(array: np.ndarray) -> np.ndarray | None:
    """The single element ``array`` repeats (a 0-d array), or ``None``.

    Compared bit for bit, so ``[0.0, -0.0]`` is not uniform and ``[nan, nan]``
    (same payload) is.
    """
    if array.size <= 1:
        return None
    flat = np.ascontiguousarray(array).reshape(-1)
    first = flat[:1]
    raw, raw_first = flat.view(np.uint8).reshape(flat.size, -1), first.view(np.uint8)
    if not np.array_equal(raw, np.broadcast_to(raw_first, raw.shape)):
        return None
    return first.reshape(())


@dataclass(frozen=True)
class _Fill:
    """A uniform constant, materialised as ``lax.full`` inside the traced function."""

    value: Any
    shape: tuple[int, ...]

    def materialize(self) -> Any:
        from jax import lax

        return lax.full(self.shape, self.value, self.value.dtype)


def _const_value(var: Var) -> Any:
    """A constant as a JAX value: a ``jnp`` array of its dtype; a uniform one as a ``lax.full`` of its element.

    Autodiff instantiates ones and zeros (a ``grad`` seed, the ``1`` of
    ``1 - tanh**2``) as dense arrays; as a broadcast scalar XLA fuses them
    instead of embedding and reading a literal.
    """
    import jax.numpy as jnp

    assert var.const is not None
    value = uniform_value(var.const)
    if value is not None:
        return _Fill(jnp.asarray(value, dtype=var.dtype.storage), var.shape)
    return jnp.asarray(var.const, dtype=var.dtype.storage)


def lower_to_jax(graph: Graph) -> Callable[..., list[Any]]:
    """A JAX function computing ``graph``: ``fn(*inputs) -> [outputs]``.

    ``fn`` takes one array per graph input (JAX or NumPy arrays, or castwise
    Tensors) of exactly the input's storage dtype and shape (``GraphError``
    otherwise: nothing is promoted) and returns a list of JAX arrays, one per
    graph output, each of its output's storage dtype. Every equation becomes
    its ``jax.lax`` primitive (see ``LOWERINGS``); constants become ``jnp``
    arrays of their dtype, created once here (a constant whose elements are
    all equal, bit for bit, becomes ``lax.full`` of one element).

    ``fn`` is traceable (``jax.jit(fn)``, ``jax.export``, shardings). Graphs
    with 64-bit values need ``jax_enable_x64``: called eagerly, ``fn`` turns it
    on for the call itself; under a trace it must already be on (``with
    jax.enable_x64(True): jax.jit(fn)(...)``), else ``LoweringError``.

    Raises ``LoweringError`` now if the graph uses a dtype this JAX lacks, and
    when called: lax's own ``TypeError`` for an unpromoted mixed-dtype
    equation (the printed equation attached as a note), ``LoweringError`` if
    lax computes an aval other than the recorded one.
    """
    import jax

    used = graph_dtypes(graph)
    missing = sorted(d.name for d in used if not jax_supports(d))
    if missing:
        raise LoweringError(f"JAX/XLA has no {', '.join(missing)}: this graph cannot be lowered")
    x64 = bool(used & X64_DTYPES)
    # what the trace captured by reference (runtime.core.capture): a write since then would be baked
    # in here, or (after this) be missed by the constants made here; either way a disagreement
    captured = graph.meta.get("captured")
    if captured is not None:
        captured.check("lower_to_jax")
    if x64 and not x64_enabled():
        with jax.enable_x64(True):
            consts = [_const_value(v) for v in graph.consts]
    else:
        consts = [_const_value(v) for v in graph.consts]

    def lowered(*args: Any) -> list[Any]:
        if captured is not None:  # (one compare while no in-place write happened anywhere)
            captured.check("lower_to_jax")
        if not x64 or x64_enabled():
            return _interpret(graph, consts, args)
        if any(isinstance(a, jax.core.Tracer) for a in args):
            raise LoweringError(
                "this graph has 64-bit values: trace it with x64 enabled, e.g. "
                "`with jax.enable_x64(True): jax.jit(fn)(...)`"
            )
        with jax.enable_x64(True):
            return _interpret(graph, consts, args)

    lowered.__doc__ = f"The JAX lowering of\n{graph}"
    return lowered


def export_stablehlo(graph: Graph) -> str:
    """The StableHLO text of ``graph`` (via ``jax.export`` of ``jax.jit(lower_to_jax(graph))``).

    Input types come from the graph's inputs (storage dtypes: ``float32r`` is
    ``f32``); 64-bit graphs are exported with x64 enabled for the call.
    """
    import contextlib

    import jax

    fn = lower_to_jax(graph)
    specs = [jax.ShapeDtypeStruct(v.shape, v.dtype.storage) for v in graph.inputs]
    context = jax.enable_x64(True) if needs_x64(graph) else contextlib.nullcontext()
    with context:
        exported = jax.export.export(jax.jit(fn))(*specs)
        return str(exported.mlir_module())
