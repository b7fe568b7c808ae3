"""JAX's transforms, compiled whole: the references of the tests that compare with JAX.

Eager ``jax.jvp(f, ...)`` or ``jax.grad(f)(x)`` compiles one XLA executable per primitive,
shape and dtype the derivative program runs (a linalg JVP is 50 of them), and compiling is most
of the test suite's CPU time. The same transform under ``jax.jit`` is one executable. These
helpers give the reference a test needs as one compiled program:

* ``jitted(jax.grad(f))(x)`` for any transformed function called on arrays;
* ``jvp(f, primals, tangents)`` for ``jax.jvp``;
* ``vjp(f, *primals)`` for ``jax.vjp`` without ``has_aux``: the pullback it returns compiles
  the forward and backward passes together on its first call;
* ``pullback(f, *primals)``: that pullback alone, where a test has the primal output already
  (``vjp`` compiles the primal output as a program of its own);
* ``jvp_and_vjp(f, primals, tangents, cotangents)``: the primal output, its JVP and the VJP of
  ``cotangents`` from one compiled program, where a test checks both modes of one function
  (three programs with ``jvp`` and ``vjp``).

What ``jax.jit`` changes is XLA's freedom to fuse, so a compiled reference may differ from the
eager one in the last bits (the parity sweep measured it per op family: see ``PACKING`` in
``autodiff/parity/packing.py``). Use these only where a test compares within a tolerance; the
bit-for-bit tests keep eager JAX. A function that needs concrete values (Python control flow
on an array, a shape from an argument) cannot be compiled; it runs eagerly instead, so the
reference is always JAX's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

#: What tracing raises for a function that reads concrete values: run it eagerly instead.
_NEEDS_VALUES: tuple[type[BaseException], ...] = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
)


def jitted(fn: Callable[..., Any], **jit_kwargs: Any) -> Callable[..., Any]:
    """``fn`` compiled by ``jax.jit``; called eagerly where tracing needs concrete values."""
    compiled = jax.jit(fn, **jit_kwargs)

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return compiled(*args, **kwargs)
        except _NEEDS_VALUES:
            return fn(*args, **kwargs)

    return call


def jvp(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``jax.jvp(fn, primals, tangents)`` as one compiled program."""
    return jitted(lambda p, t: jax.jvp(fn, p, t))(tuple(primals), tuple(tangents))  # type: ignore[no-any-return]


def vjp(fn: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """``jax.vjp(fn, *primals)``: the primal output (compiled), and a pullback compiled with
    the forward pass on its first call."""
    out = jitted(fn)(*primals)
    pullback = jitted(lambda p, ct: jax.vjp(fn, *p)[1](ct))

    def apply(ct: Any) -> tuple[Any, ...]:
        return pullback(primals, ct)  # type: ignore[no-any-return]

    return out, apply


def pullback(fn: Callable[..., Any], *primals: Any) -> Callable[[Any], tuple[Any, ...]]:
    """``jax.vjp(fn, *primals)[1]``, compiled with the forward pass on its first call (without
    ``vjp``'s separately compiled primal output)."""
    compiled = jitted(lambda p, ct: jax.vjp(fn, *p)[1](ct))
    return lambda ct: compiled(primals, ct)  # type: ignore[no-any-return]


def jvp_and_vjp(
    fn: Callable[..., Any],
    primals: Sequence[Any],
    tangents: Sequence[Any],
    cotangents: Any | Callable[[Any], Any],
) -> tuple[Any, Any, tuple[Any, ...]]:
    """``(out, out_tangent, input_cotangents)``: ``jax.jvp(fn, primals, tangents)`` and
    ``jax.vjp(fn, *primals)[1](cotangents)``, one compiled program for both.

    ``cotangents`` may be a function of the output's shape: it is called with what
    ``jax.eval_shape`` gives for ``fn`` (a pytree of ``jax.ShapeDtypeStruct``), or, for a
    function that needs concrete values, with its eager output."""
    primals, tangents = tuple(primals), tuple(tangents)
    if callable(cotangents):
        try:
            shapes = jax.eval_shape(fn, *primals)
        except _NEEDS_VALUES:
            shapes = fn(*primals)
        cotangents = cotangents(shapes)

    def both(p: tuple[Any, ...], t: tuple[Any, ...], ct: Any) -> tuple[Any, Any, tuple[Any, ...]]:
        out, out_t = jax.jvp(fn, p, t)
        return out, out_t, jax.vjp(fn, *p)[1](ct)

    return jitted(both)(primals, tangents, cotangents)  # type: ignore[no-any-return]
