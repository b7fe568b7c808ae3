"""Jacobians and Hessians: ``jacfwd`` (``vmap`` of the JVP over a basis), ``jacrev`` (``vmap`` of
the VJP) and ``hessian`` (``jacfwd`` of ``jacrev``), built on ``autodiff.api`` and ``autodiff.batching``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autodiff.api import (
    _argnums,
    _argument,
    _check_inexact,
    _distinct,
    _leaves_like,
    _output_leaves,
    _substitute,
    _unflatten,
    linearize,
    tensor_leaves,
    vjp,
)
from autodiff.batching import vmap
from autodiff.pytree import (
    TreeDef,
    flatten_up_to,
    tree_unflatten,
)
from autodiff.zeros import Zero
from runtime.core import lax as F
from runtime.core.tensor import Tensor


def _basis(x: Tensor) -> Tensor:
    """The standard basis of ``x``'s space, stacked: shape ``(x.size,) + x.shape``, ``x``'s dtype
    (row ``i`` is zero but for a one at flat index ``i``)."""
    eye = np.zeros((x.size, x.size), x.dtype.storage)
    np.fill_diagonal(eye, 1)
    return Tensor(eye.reshape((x.size, *x.shape)), x.dtype)


#: how one mode fills the Jacobian's blocks: (the derivative function, the output, the input leaves
#: and structure, the output leaves and structure) -> one list of blocks per output leaf
_Fill = Callable[[Callable[..., Any], Any, list[Tensor], TreeDef, list[Tensor], TreeDef], list[list[Tensor]]]


def _jacobian(
    f: Callable[..., Any],
    argnums: int | Sequence[int],
    has_aux: bool,
    what: str,
    record: Callable[..., tuple[Any, ...]],
    fill: _Fill,
) -> Callable[..., Any]:
    """What ``jacfwd`` and ``jacrev`` share: ``argnums`` and pytrees in, one recording of ``f``
    (``record``: ``linearize`` or ``vjp``), the blocks by ``fill``, JAX's layout out."""
    single = isinstance(argnums, int)

    def jacobian(*args: Any) -> Any:
        positions = _distinct(_argnums(argnums, len(args), what), what)
        _check_inexact(args, positions, what, "derivative")
        diff = tuple(args[p] for p in positions)
        result = record(_substitute(f, args, positions), *diff, has_aux=has_aux)
        out, derivative = result[0], result[1]
        in_leaves, in_tree = tensor_leaves(diff, what, _argument)
        out_leaves, out_tree = _output_leaves(out, what)
        blocks = fill(derivative, out, in_leaves, in_tree, out_leaves, out_tree)
        # JAX's layout: the output's structure, each leaf replaced by the (differentiated)
        # arguments' structure (its single entry for an int argnums)
        inner = [tree_unflatten(in_tree, row) for row in blocks]
        jac = _unflatten(out_tree, [tup[0] for tup in inner] if single else inner)
        return (jac, result[2]) if has_aux else jac

    return jacobian


def _forward_blocks(
    f_jvp: Callable[..., Any], out: Any, in_leaves: list[Tensor], in_tree: TreeDef, out_leaves: list[Tensor],
    out_tree: TreeDef,
) -> list[list[Tensor]]:  # fmt: skip
    """``vmap`` of the JVP over the standard basis of each input leaf, the other leaves' tangents
    symbolic zeros (unmapped): column block ``j`` of every output leaf in one batched pass."""
    blocks: list[list[Tensor]] = [[] for _ in out_leaves]
    for j, x in enumerate(in_leaves):
        tangents: list[Any] = [Zero.like(y) for y in in_leaves]
        tangents[j] = _basis(x)
        axes: list[int | None] = [None] * len(in_leaves)
        axes[j] = 0
        columns = vmap(f_jvp, in_axes=tree_unflatten(in_tree, axes), out_axes=-1)(*tree_unflatten(in_tree, tangents))
        for k, (o, c) in enumerate(zip(out_leaves, _leaves_like(columns, out_tree, "jacfwd", out), strict=True)):
            blocks[k].append(F.reshape(c, o.shape + x.shape))
    return blocks


def _reverse_blocks(
    vjp_fn: Callable[..., Any], out: Any, in_leaves: list[Tensor], in_tree: TreeDef, out_leaves: list[Tensor],
    out_tree: TreeDef,
) -> list[list[Tensor]]:  # fmt: skip
    """``vmap`` of the VJP function over the standard basis of each output leaf, the other leaves
    without a cotangent: row block ``k`` for every input leaf in one batched pass."""
    real_input = any(x.dtype.kind != "complex" for x in in_leaves)
    blocks: list[list[Tensor]] = [[] for _ in out_leaves]
    for k, o in enumerate(out_leaves):
        if not o.dtype.is_inexact:
            raise TypeError(f"jacrev: output leaf {k} has dtype {o.dtype.name}, which has no cotangent")
        if o.dtype.kind == "complex" and real_input:
            raise TypeError(
                f"jacrev: output leaf {k} is complex but an input is real: reverse mode under the real "
                "inner product sees only its real part; use jacfwd"
            )
        cts: list[Any] = [None] * len(out_leaves)  # None: no leaf, so only the basis is mapped
        cts[k] = _basis(o)
        rows = vmap(vjp_fn)(_unflatten(out_tree, cts))
        for x, r in zip(in_leaves, flatten_up_to(in_tree, rows), strict=True):
            blocks[k].append(F.reshape(r, o.shape + x.shape))
    return blocks


def jacfwd(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The Jacobian of ``f`` with respect to ``argnums`` in forward mode: ``vmap`` of the JVP
    over the standard basis of each input leaf (one recording of ``f``, one batched JVP per leaf).

    Inputs and outputs are pytrees; the result has the output's structure with
    each leaf replaced by the arguments' structure (a tuple of them for a tuple
    ``argnums``), each entry of shape ``out.shape + in.shape`` and the output's
    dtype, as ``jax.jacfwd``. A complex input is differentiated along its real
    axis (the Jacobian of a holomorphic ``f``, as ``jax.jacfwd(holomorphic=True)``).
    With ``has_aux``, returns ``(jacobian, aux)``.
    """
    return _jacobian(f, argnums, has_aux, "jacfwd", linearize, _forward_blocks)


def jacrev(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The Jacobian of ``f`` with respect to ``argnums`` in reverse mode: ``vmap`` of the VJP
    function over the standard basis of each output leaf (one recording of ``f``, one batched
    VJP per output leaf).

    Same layout as ``jacfwd``, each entry with its input's dtype. Under
    castwise's complex convention (PyTorch's) row ``k`` is the VJP of the
    unit cotangent ``e_k``, so for a real-valued ``f`` of complex inputs it is
    ``grad`` of output ``k`` and for a holomorphic ``f`` it is the conjugate of
    the Jacobian: ``jacrev(f) == conj(jax.jacrev(f, holomorphic=True))``. A
    complex output of real inputs is refused (``TypeError``: use ``jacfwd``).
    With ``has_aux``, returns ``(jacobian, aux)``.
    """
    return _jacobian(f, argnums, has_aux, "jacrev", vjp, _reverse_blocks)


def hessian(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The Hessian of a real-scalar ``f``: ``jacfwd(jacrev(f))`` (forward over reverse), with JAX's
    pytree layout (each entry of shape ``in_i.shape + in_j.shape``)."""
    return jacfwd(jacrev(f, argnums, has_aux), argnums, has_aux)
