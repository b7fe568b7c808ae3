"""The user API: ``jvp``, ``vjp``, ``grad``, ``value_and_grad``, ``linearize``,
and the eager tape behind ``Tensor.backward``.

Functions are differentiated by recording them eagerly on tracked copies of
their inputs and walking the recorded equations with the rule tables. When an
input is already tracked (a nested ``grad``, or inside ``runtime.trace``), the
derivative computation is recorded too, so derivatives of derivatives work and
derivative programs are ordinary graphs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autodiff.engine import accumulate_grad, jvp_pass, reachable_eqns, vjp_pass
from autodiff.record import enable_grad, no_grad, saving_all
from autodiff.rules import load_rules
from autodiff.zeros import TangentLike, Zero, instantiate
from runtime import hooks
from runtime.graph import new_leaf
from runtime.tensor import Tensor, asarray

load_rules()


class NonDifferentiableInputError(TypeError):
    """Asked for the derivative with respect to an integer or bool input."""


def _as_tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else asarray(x)


def _leaf(x: Any, what: str, strict: bool) -> tuple[Tensor, bool]:
    """A tracked version of ``x`` and whether it was already tracked (nesting)."""
    t = _as_tensor(x)
    if not t.dtype.is_inexact:
        if strict:
            raise NonDifferentiableInputError(
                f"{what} has dtype {t.dtype.name}: integer and bool inputs have no tangent; "
                "differentiate with respect to a float or complex input, or convert it first"
            )
        return t, False
    if t.node is not None:
        return t, True
    t = Tensor(t._array, t.dtype)
    new_leaf(t)
    return t, False


def _flatten(out: Any) -> tuple[list[Tensor], bool]:
    if isinstance(out, Tensor):
        return [out], False
    if isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
        return list(out), True
    raise TypeError(f"the differentiated function must return a Tensor or a tuple of Tensors, got {type(out).__name__}")


def _record(
    f: Callable[..., Any], primals: Sequence[Any], keep_all: bool = False
) -> tuple[list[Tensor], bool, list[Tensor], bool, list[Any]]:
    """Record ``f`` on tracked versions of ``primals`` (holding every value with
    ``keep_all``, for forward mode; otherwise what the VJP rules read).

    Returns the tracked inputs, whether any was already tracked (a nested
    transform, so derivative work must be recorded too), the outputs, whether
    ``f`` returned a tuple, and the equations from the inputs to the outputs.
    """
    leaves = [_leaf(p, f"primal {i}", strict=False) for i, p in enumerate(primals)]
    xs = [t for t, _ in leaves]
    nested = any(was for _, was in leaves)
    with enable_grad(), saving_all() if keep_all else contextlib.nullcontext():
        out = f(*xs)
    outs, is_tuple = _flatten(out)
    boundary = [x.node for x in xs if x.node is not None]
    eqns = reachable_eqns([o.node for o in outs if o.node is not None], boundary)
    return xs, nested, outs, is_tuple, eqns


def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """Forward mode: ``(f(*primals), J @ tangents)``.

    ``tangents`` has one entry per primal with the primal's dtype and shape
    (``None`` for an integer primal).
    """
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    out, f_jvp = linearize(f, *primals)
    return out, f_jvp(*tangents)


def linearize(f: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(f(*primals), f_jvp)`` where ``f_jvp(*tangents)`` reuses one recording of ``f``."""
    xs, nested, outs, is_tuple, eqns = _record(f, primals, keep_all=True)

    def f_jvp(*tangents: Any) -> Any:
        if len(tangents) != len(xs):
            raise ValueError(f"jvp: expected {len(xs)} tangents, got {len(tangents)}")
        seeds: dict[int, TangentLike] = {}
        for i, (x, t) in enumerate(zip(xs, tangents, strict=True)):
            if t is None or isinstance(t, Zero):
                continue
            if not x.dtype.is_inexact:
                raise NonDifferentiableInputError(f"jvp: primal {i} has dtype {x.dtype.name} and takes no tangent")
            tt = _as_tensor(t)
            if tt.dtype is not x.dtype or tt.shape != x.shape:
                raise TypeError(
                    f"jvp: tangent {i} is {tt.dtype.short}{list(tt.shape)} "
                    f"but its primal is {x.dtype.short}{list(x.shape)}"
                )
            assert x.node is not None
            seeds[id(x.node)] = tt
        tracked_tangent = any(isinstance(t, Tensor) and t.node is not None for t in tangents)
        created = jvp_pass(eqns, seeds, create_graph=nested or tracked_tangent)
        results = []
        for o in outs:
            if o.node is not None and id(o.node) in created:
                results.append(created[id(o.node)])
            elif o.node is not None and id(o.node) in seeds:
                results.append(seeds[id(o.node)])
            else:
                results.append(instantiate(Zero.like(o)))
        results = [instantiate(r) for r in results]
        return tuple(results) if is_tuple else results[0]

    return (tuple(outs) if is_tuple else outs[0]), f_jvp


def vjp(f: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., tuple[Tensor | None, ...]]]:
    """Reverse mode: ``(f(*primals), vjp_fn)``; ``vjp_fn(cotangent)`` returns one
    cotangent per primal (``None`` for integer primals), under the real inner
    product convention (PyTorch's; JAX's is its conjugate)."""
    xs, nested, outs, is_tuple, eqns = _record(f, primals)

    def vjp_fn(cotangent: Any) -> tuple[Tensor | None, ...]:
        cts_in = list(cotangent) if is_tuple else [cotangent]
        if len(cts_in) != len(outs):
            raise ValueError(f"vjp: expected {len(outs)} cotangents, got {len(cts_in)}")
        seeds: dict[int, TangentLike] = {}
        create = nested
        for i, (o, c) in enumerate(zip(outs, cts_in, strict=True)):
            if c is None or isinstance(c, Zero) or o.node is None:
                continue
            ct = _as_tensor(c)
            if ct.dtype is not o.dtype or ct.shape != o.shape:
                raise TypeError(
                    f"vjp: cotangent {i} is {ct.dtype.short}{list(ct.shape)} "
                    f"but the output is {o.dtype.short}{list(o.shape)}"
                )
            create = create or ct.node is not None
            key = id(o.node)
            seeds[key] = ct if key not in seeds else seeds[key] + ct
        result = vjp_pass(eqns, seeds, create_graph=create)
        grads: list[Tensor | None] = []
        for x in xs:
            if not x.dtype.is_inexact or x.node is None:
                grads.append(None)
            else:
                grads.append(instantiate(result.get(id(x.node), Zero.like(x))))
        return tuple(grads)

    return (tuple(outs) if is_tuple else outs[0]), vjp_fn


def value_and_grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., tuple[Tensor, Any]]:
    """``f``'s value and its gradient with respect to ``argnums``.

    ``f`` must return a real scalar. For a complex input the gradient is
    dL/dx + i dL/dy (PyTorch's convention; ``jax.grad`` returns the conjugate).
    """
    single = isinstance(argnums, int)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    def wrapped(*args: Any) -> tuple[Tensor, Any]:
        for n in nums:
            if not -len(args) <= n < len(args):
                raise IndexError(f"argnums {n} is out of range for {len(args)} arguments")
            t = _as_tensor(args[n])
            if not t.dtype.is_inexact:
                raise NonDifferentiableInputError(
                    f"grad: argument {n} has dtype {t.dtype.name}; integer and bool inputs have no gradient"
                )
        positions = [n % len(args) for n in nums]

        def g(*diff: Any) -> Any:
            call = list(args)
            for p, d in zip(positions, diff, strict=True):
                call[p] = d
            return f(*call)

        out, vjp_fn = vjp(g, *[args[p] for p in positions])
        if not isinstance(out, Tensor) or out.size != 1 or out.dtype.kind != "float":
            shape = getattr(out, "shape", None)
            dtype = getattr(getattr(out, "dtype", None), "name", type(out).__name__)
            where = list(shape) if shape is not None else ""
            raise TypeError(f"grad requires a real scalar output, got {dtype}{where}")
        ones = Tensor(np.ones(out.shape, out.dtype.storage), out.dtype)
        grads = vjp_fn(ones)
        return out, (grads[0] if single else grads)

    return wrapped


def grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """The gradient of a real-scalar ``f`` with respect to ``argnums``."""
    vg = value_and_grad(f, argnums)

    def wrapped(*args: Any) -> Any:
        return vg(*args)[1]

    return wrapped


def backward(tensor: Tensor, cotangent: Any = None, retain_graph: bool = False, create_graph: bool = False) -> None:
    """``tensor.backward()``: accumulate cotangents into the ``.grad`` of tracked leaves.

    Leaves that receive no cotangent keep ``grad = None``. Without
    ``retain_graph`` the saved values are released, and a second backward
    through the same recording raises.
    """
    if tensor.node is None:
        raise RuntimeError("backward() on a tensor that is not tracked (no input requires grad)")
    if cotangent is None:
        if tensor.size != 1 or tensor.dtype.kind != "float":
            raise RuntimeError(
                "backward() without a cotangent needs a real scalar output; pass cotangent= for "
                f"{tensor.dtype.name}{list(tensor.shape)}"
            )
        ct = Tensor(np.ones(tensor.shape, tensor.dtype.storage), tensor.dtype)
    else:
        ct = _as_tensor(cotangent)
        if ct.dtype is not tensor.dtype or ct.shape != tensor.shape:
            raise TypeError(
                f"backward: cotangent is {ct.dtype.short}{list(ct.shape)} but the output is "
                f"{tensor.dtype.short}{list(tensor.shape)}"
            )
    root = tensor.node
    eqns = reachable_eqns([root])
    cts = vjp_pass(eqns, {id(root): ct}, create_graph=create_graph, release=not retain_graph)
    leaves = {id(v): v for e in eqns for v in e.inputs if v.producer is None and v.const is None}
    if root.producer is None:
        leaves[id(root)] = root
    with enable_grad() if create_graph else no_grad():
        for key, var in leaves.items():
            g = cts.get(key)
            owner = var.owner() if var.owner is not None else None
            if g is None or isinstance(g, Zero) or owner is None:
                continue
            accumulate_grad(owner, g)


hooks.backward_hook = backward
