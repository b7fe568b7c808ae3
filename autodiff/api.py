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
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autodiff.engine import accumulate_grad, dependent_eqns, jvp_pass, reachable_eqns, vjp_pass
from autodiff.pytree import (
    TreeDef,
    flatten_up_to,
    leaf_paths,
    tree_flatten,
    tree_map,
    tree_structure,
    tree_unflatten,
    treedef_is_leaf,
)
from autodiff.record import _fresh_input, enable_grad, no_grad, saving_all
from autodiff.rules import load_rules
from autodiff.zeros import TangentLike, Zero, instantiate
from runtime.core import hooks
from runtime.core import lax as F
from runtime.core.errors import CastwiseError
from runtime.core.executor import asarray
from runtime.core.tensor import Tensor
from runtime.core.versions import memory_owner

load_rules()


class NonDifferentiableInputError(CastwiseError, TypeError):
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
        # A new variable, not the outer one: the inner transform's input must be distinct from
        # the same value closed over (``grad(lambda y: y * x)(x)`` is ``x``, not ``2x``), yet
        # derivatives of the inner result must still reach ``x`` through it (an identity
        # convert, recorded; its value is ``x``'s own array).
        with enable_grad():
            inner = F.convert(t, t.dtype)
        assert inner.node is not None
        inner.node.value = inner._array
        return inner, True
    return _fresh_input(t), False


def _unshared(t: Tensor, seen: set[int]) -> Tensor:
    """``t`` as a result the user may own: a copy when its array is a view, read-only, or
    shares memory with an array already handed out or given by the user (``seen``: ids of
    memory owners, updated).

    Rules pass cotangents through unchanged where the math allows (``add`` gives both
    operands the same one, ``reshape`` a view of it), so without this ``a.grad`` and
    ``b.grad`` could be one array, or ``x.grad`` a view of the user's cotangent, and an
    in-place edit of one would silently change the other. A tracked result (derivative
    work recorded for an outer transform) is returned as it is: in-place writes into it
    are refused anyway.
    """
    if t.node is not None:
        return t
    array = t._array
    if isinstance(array, np.ndarray):
        owner = memory_owner(array)
        if owner is array and array.flags.writeable and id(owner) not in seen:
            seen.add(id(owner))
            return t
    out = Tensor(np.array(array, copy=True), t.dtype)
    out.weak = t.weak
    return out


def _zeros_like(x: Tensor) -> Tensor:
    """The instantiated zero tangent of ``x``: its dtype, shape and weak flag (JAX's
    ``zeros_like_aval``: a weak primal's zero tangent is weak)."""
    out = instantiate(Zero.like(x))
    out.weak = x.weak
    return out


def _seen_owners(tensors: Sequence[Any]) -> set[int]:
    """The memory owners of the user's own arrays among ``tensors`` (see ``_unshared``)."""
    return {id(memory_owner(t._array)) for t in tensors if isinstance(t, Tensor) and isinstance(t._array, np.ndarray)}


# -- pytrees at the API boundary -----------------------------------------------------------------

_ARRAY_SCALARS = (bool, int, float, complex, np.ndarray, np.generic)


def _is_array_like(x: Any) -> bool:
    return isinstance(x, (Tensor, *_ARRAY_SCALARS)) or hasattr(x, "__array__")


def _where(prefix: str, path: str) -> str:
    return f"{prefix}, leaf {path}" if path else prefix


def tensor_leaves(tree: Any, what: str, prefix: Callable[[int], str] | str) -> tuple[list[Tensor], TreeDef]:
    """The leaves of ``tree`` as Tensors (arrays and Python scalars converted) and its structure.

    A leaf that is not an array raises ``TypeError`` naming its path, as
    ``grad: argument 0, leaf ['w'][1] is a str``. With a callable ``prefix``,
    ``tree`` is a tuple of arguments and ``prefix(i)`` names argument ``i``.
    """
    if type(tree) is tuple and all(type(x) is Tensor for x in tree):  # the common case: no optree walk
        return list(tree), _flat_tuple(len(tree))
    leaves, treedef = tree_flatten(tree)
    if all(type(x) is Tensor for x in leaves):
        return leaves, treedef
    out: list[Tensor] = []
    for i, x in enumerate(leaves):
        if isinstance(x, Tensor):
            out.append(x)
            continue
        if not _is_array_like(x):
            raise TypeError(f"{what}: {_describe_leaf(tree, i, prefix)} is a {type(x).__name__}, not an array")
        out.append(asarray(x))
    return out, treedef


def _describe_leaf(tree: Any, index: int, prefix: Callable[[int], str] | str) -> str:
    """``argument 0, leaf ['w'][1]``: where leaf ``index`` of ``tree`` sits."""
    paths, _, _ = leaf_paths(tree)
    path = paths[index]
    if callable(prefix):  # the tree is the tuple of arguments: its first path entry is the argument
        m = re.match(r"\[(\d+)\]", path)
        assert m is not None
        return _where(prefix(int(m.group(1))), path[m.end() :])
    return _where(prefix, path)


def _argument(i: int) -> str:
    return f"argument {i}"


def _output_leaves(out: Any, what: str) -> tuple[list[Tensor], TreeDef]:
    """A function's result as Tensor leaves: arrays and Python scalars become Tensors."""
    if type(out) is Tensor:
        return [out], _LEAF
    return tensor_leaves(out, what, "the function's output")


def _leaves_like(tree: Any, treedef: TreeDef, what: str, like: Any) -> list[Any]:
    """``tree`` flattened to ``treedef``'s leaves (``None`` at a leaf position: no value there).

    A tuple given where ``like`` (the value ``treedef`` describes) is a list,
    or the reverse, is accepted, as is a bare value for a single leaf.
    """
    if treedef is _LEAF or treedef_is_leaf(treedef):
        return [tree]
    try:
        return flatten_up_to(treedef, tree)
    except (ValueError, TypeError):
        if isinstance(like, tuple | list) and isinstance(tree, tuple | list) and len(like) == len(tree):
            retyped = type(like)(*tree) if hasattr(like, "_fields") else type(like)(tree)
            try:
                return flatten_up_to(treedef, retyped)
            except (ValueError, TypeError):
                pass
        raise TypeError(f"{what} has structure {tree_structure(tree)} but the function's output is {treedef}") from None


_LEAF = tree_structure(0)
_FLAT_TUPLES: dict[int, TreeDef] = {}


def _flat_tuple(n: int) -> TreeDef:
    """The structure of a tuple of ``n`` leaves (memoised: the common case of every transform)."""
    treedef = _FLAT_TUPLES.get(n)
    if treedef is None:
        treedef = _FLAT_TUPLES[n] = tree_structure((0,) * n)
    return treedef


def _unflatten(treedef: TreeDef, leaves: Sequence[Any]) -> Any:
    if treedef is _FLAT_TUPLES.get(len(leaves)):
        return tuple(leaves)
    if treedef is _LEAF:
        return leaves[0]
    return tree_unflatten(treedef, leaves)


def _split_aux(out: Any, what: str) -> tuple[Any, Any]:
    if not (isinstance(out, tuple | list) and len(out) == 2):
        raise TypeError(
            f"{what} with has_aux=True: the function must return a pair (output, aux), got {type(out).__name__}"
        )
    return out[0], out[1]


def _detach_aux(aux: Any, nested: bool) -> Any:
    """``aux`` as returned to the user: cut from this transform's recording (``jax``'s aux
    carries no derivative), unless an outer transform is recording through it."""
    if nested:
        return aux
    return tree_map(lambda x: Tensor(x._array, x.dtype) if isinstance(x, Tensor) and x.node is not None else x, aux)


def _detach_outputs(outs: Sequence[Tensor], nested: bool) -> list[Tensor]:
    """The primal outputs as returned to the user: plain values, as JAX's are (they hang off
    the transform's private recording otherwise, so an in-place write into one is refused and
    ops on them record for nothing), unless an outer transform is recording through them."""
    if nested:
        return list(outs)
    return [o.detach() if o.node is not None else o for o in outs]  # (detach keeps the weak flag)


class _Traced:
    """What recording a function leaves behind: its output structure and aux."""

    __slots__ = ("aux", "out", "out_tree")

    def __init__(self) -> None:
        self.out: Any = None
        self.out_tree: TreeDef = _LEAF
        self.aux: Any = None


def _flat_function(f: Callable[..., Any], in_tree: TreeDef, traced: _Traced, has_aux: bool, what: str) -> Any:
    """``f`` as a function of its argument leaves that returns its output leaves."""

    def flat(*xs: Tensor) -> list[Tensor]:
        out = f(*_unflatten(in_tree, xs))
        if has_aux:
            out, traced.aux = _split_aux(out, what)
        leaves, traced.out_tree = _output_leaves(out, what)
        traced.out = out
        return leaves

    return flat


def _record(
    f: Callable[..., list[Tensor]], primals: Sequence[Any], keep_all: bool = False
) -> tuple[list[Tensor], bool, list[Tensor], list[Any]]:
    """Record ``f`` (leaves in, leaves out) on tracked versions of ``primals``
    (holding every value with ``keep_all``, for forward mode; otherwise what
    the VJP rules read).

    Returns the tracked inputs, whether any was already tracked (a nested
    transform, so derivative work must be recorded too), the output leaves,
    and the equations from the inputs to the outputs.
    """
    leaves = [_leaf(p, f"primal {i}", strict=False) for i, p in enumerate(primals)]
    xs = [t for t, _ in leaves]
    nested = any(was for _, was in leaves)
    with enable_grad(), saving_all() if keep_all else contextlib.nullcontext():
        outs = f(*xs)
    boundary = [x.node for x in xs if x.node is not None]
    eqns = reachable_eqns([o.node for o in outs if o.node is not None], boundary)
    eqns, closes_over_tracked = dependent_eqns(eqns, boundary)
    return xs, nested or closes_over_tracked, outs, eqns


def jvp(
    f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False
) -> tuple[Any, ...]:
    """Forward mode: ``(f(*primals), J @ tangents)`` (and ``aux`` with ``has_aux``).

    ``primals`` is a tuple or list with one pytree per argument of ``f``;
    ``tangents`` has the same structure, each leaf with its primal's dtype
    and shape (``None`` for an integer leaf). ``f`` returns a pytree of
    arrays, and the tangent has its structure. With ``has_aux``, ``f``
    returns ``(output, aux)`` and ``aux`` comes back third, undifferentiated.
    """
    if not isinstance(primals, tuple | list) or not isinstance(tangents, tuple | list):
        raise TypeError(
            f"jvp: primals and tangents must be tuples or lists (one entry per argument), got "
            f"{type(primals).__name__} and {type(tangents).__name__}"
        )
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    if has_aux:
        out, f_jvp, aux = linearize(f, *primals, has_aux=True)
        return out, f_jvp(*tangents), aux
    out, f_jvp = linearize(f, *primals)
    return out, f_jvp(*tangents)


def linearize(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(f(*primals), f_jvp)`` where ``f_jvp(*tangents)`` reuses one recording of ``f``
    (with ``has_aux``: ``(output, f_jvp, aux)``). Primals, tangents and outputs are pytrees."""
    flat_primals, in_tree = tensor_leaves(primals, "jvp", _argument)
    traced = _Traced()
    flat_f = _flat_function(f, in_tree, traced, has_aux, "jvp")
    xs, nested, outs, eqns = _record(flat_f, flat_primals, keep_all=True)
    out_tree = traced.out_tree

    def f_jvp(*tangents: Any) -> Any:
        if len(tangents) != len(primals):
            raise ValueError(f"jvp: expected {len(primals)} tangents, got {len(tangents)}")
        try:
            flat_tangents = flatten_up_to(in_tree, tuple(tangents))
        except (ValueError, TypeError):
            raise TypeError(
                f"jvp: the tangents have structure {tree_structure(tuple(tangents))} but the primals are {in_tree}"
            ) from None
        seeds: dict[int, TangentLike] = {}
        tracked_tangent = False
        for i, (x, t) in enumerate(zip(xs, flat_tangents, strict=True)):
            if t is None or isinstance(t, Zero):
                continue
            if not x.dtype.is_inexact:
                raise NonDifferentiableInputError(
                    f"jvp: primal {_describe_leaf(primals, i, _argument)} has dtype {x.dtype.name} and takes no tangent"
                )
            tt = _as_tensor(t)
            if tt.dtype is not x.dtype or tt.shape != x.shape:
                where = _describe_leaf(primals, i, _argument) if len(xs) > 1 else "0"
                raise TypeError(
                    f"jvp: tangent {where} is {tt.dtype.short}{list(tt.shape)} "
                    f"but its primal is {x.dtype.short}{list(x.shape)}"
                )
            assert x.node is not None
            seeds[id(x.node)] = tt
            tracked_tangent = tracked_tangent or tt.node is not None
        given = _seen_owners(list(seeds.values()))
        created = jvp_pass(eqns, seeds, create_graph=nested or tracked_tangent)
        results = []
        for o in outs:
            if o.node is not None and id(o.node) in created:
                results.append(created[id(o.node)])
            elif o.node is not None and id(o.node) in seeds:
                results.append(seeds[id(o.node)])
            else:
                results.append(_zeros_like(o))
        return _unflatten(out_tree, [_unshared(instantiate(r), given) for r in results])

    out = _unflatten(out_tree, _detach_outputs(outs, nested))
    if has_aux:
        return out, f_jvp, _detach_aux(traced.aux, nested)
    return out, f_jvp


def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """Reverse mode: ``(f(*primals), vjp_fn)`` (with ``has_aux``: ``(output, vjp_fn, aux)``).

    ``vjp_fn(cotangent)`` takes a cotangent with the output's pytree structure
    (``None`` for a leaf with no cotangent) and returns a tuple with one
    cotangent pytree per primal (``None`` for integer leaves), under the real
    inner product convention (PyTorch's; JAX's is its conjugate).
    """
    flat_primals, in_tree = tensor_leaves(primals, "vjp", _argument)
    traced = _Traced()
    flat_f = _flat_function(f, in_tree, traced, has_aux, "vjp")
    xs, nested, outs, eqns = _record(flat_f, flat_primals)
    out_tree, out_value = traced.out_tree, traced.out

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        cts_in = _leaves_like(cotangent, out_tree, "vjp: the cotangent", out_value)
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
        given = _seen_owners(list(seeds.values()))
        result = vjp_pass(eqns, seeds, create_graph=create)
        grads: list[Tensor | None] = []
        for x in xs:
            if not x.dtype.is_inexact or x.node is None:
                grads.append(None)
            else:
                g = result.get(id(x.node))
                grads.append(_zeros_like(x) if g is None or isinstance(g, Zero) else _unshared(g, given))
        result = _unflatten(in_tree, grads)
        return result if type(result) is tuple else tuple(result)

    out = _unflatten(out_tree, _detach_outputs(outs, nested))
    if has_aux:
        return out, vjp_fn, _detach_aux(traced.aux, nested)
    return out, vjp_fn


def _argnums(argnums: int | Sequence[int], nargs: int, what: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise ValueError(f"{what}: argnums is empty")
    for n in nums:
        if not isinstance(n, int) or not -nargs <= n < nargs:
            raise IndexError(f"{what}: argnums {n} is out of range for {nargs} arguments")
    return tuple(n % nargs for n in nums)


def _check_inexact(args: Sequence[Any], positions: Sequence[int], what: str, verb: str) -> None:
    """Every leaf of the differentiated arguments is a float or complex array."""
    for p in positions:
        arg = args[p]
        if type(arg) is Tensor:
            if not arg.dtype.is_inexact:
                raise NonDifferentiableInputError(
                    f"{what}: argument {p} has dtype {arg.dtype.name}; integer and bool inputs have no {verb}"
                )
            continue
        leaves, _ = tensor_leaves(args[p], what, _argument(p))
        for i, t in enumerate(leaves):
            if not t.dtype.is_inexact:
                raise NonDifferentiableInputError(
                    f"{what}: {_describe_leaf(args[p], i, _argument(p))} has dtype {t.dtype.name}; "
                    f"integer and bool inputs have no {verb}"
                )


def _copy_leaf(x: Any) -> Any:
    return Tensor(np.array(x._array, copy=True), x.dtype) if isinstance(x, Tensor) and x.node is None else x


def _distinct(positions: tuple[int, ...], what: str) -> tuple[int, ...]:
    if len(set(positions)) != len(positions):
        raise ValueError(
            f"{what}: argnums {positions} repeats an argument; pass each argument number once (the Jacobian "
            "with respect to a repeated argument is the same block)"
        )
    return positions


def _substitute(f: Callable[..., Any], args: Sequence[Any], positions: Sequence[int]) -> Callable[..., Any]:
    """``f`` as a function of the arguments at ``positions`` (the others fixed)."""

    def g(*diff: Any) -> Any:
        call = list(args)
        for p, d in zip(positions, diff, strict=True):
            call[p] = d
        return f(*call)

    return g


def value_and_grad(
    f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[..., tuple[Any, Any]]:
    """``f``'s value and its gradient with respect to ``argnums``.

    ``f`` must return a real scalar (with ``has_aux``: a pair ``(scalar,
    aux)``, and the value is ``(scalar, aux)``). Each differentiated argument
    may be a pytree; its gradient has the same structure (a tuple of them for
    a tuple ``argnums``). For a complex input the gradient is dL/dx + i dL/dy
    (PyTorch's convention; ``jax.grad`` returns the conjugate).
    """
    single = isinstance(argnums, int)

    def wrapped(*args: Any) -> tuple[Any, Any]:
        requested = _argnums(argnums, len(args), "grad")
        # a repeated argnum is one argument: differentiate once, hand out a copy per repetition
        positions = tuple(dict.fromkeys(requested))
        _check_inexact(args, positions, "grad", "gradient")
        g = _substitute(f, args, positions)
        if has_aux:
            out, vjp_fn, aux = vjp(g, *[args[p] for p in positions], has_aux=True)
        else:
            out, vjp_fn = vjp(g, *[args[p] for p in positions])
        if not isinstance(out, Tensor) or out.size != 1 or out.dtype.kind != "float":
            shape = getattr(out, "shape", None)
            dtype = getattr(getattr(out, "dtype", None), "name", type(out).__name__)
            where = list(shape) if shape is not None else ""
            raise TypeError(f"grad requires a real scalar output, got {dtype}{where}")
        ones = Tensor(np.ones(out.shape, out.dtype.storage), out.dtype)
        ones.weak = out.weak  # jax.grad seeds with ones of the output's aval, weak flag included
        grads = vjp_fn(ones)
        if len(positions) != len(requested):
            first = {p: True for p in positions}
            repeated = []
            for p in requested:
                tree = grads[positions.index(p)]
                repeated.append(tree if first.pop(p, False) else tree_map(_copy_leaf, tree))
            grads = tuple(repeated)
        result = grads[0] if single else grads
        return ((out, aux) if has_aux else out), result

    return wrapped


def grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of a real-scalar ``f`` with respect to ``argnums`` (a pytree like the
    argument; with ``has_aux``, ``(gradient, aux)``)."""
    vg = value_and_grad(f, argnums, has_aux)

    if has_aux:

        def wrapped_aux(*args: Any) -> Any:
            (_, aux), g = vg(*args)
            return g, aux

        return wrapped_aux

    def wrapped(*args: Any) -> Any:
        return vg(*args)[1]

    return wrapped


# -- Jacobians -------------------------------------------------------------------------------------


def backward(tensor: Tensor, cotangent: Any = None, retain_graph: bool = False, create_graph: bool = False) -> None:
    """``tensor.backward()``: accumulate cotangents into the ``.grad`` of tracked leaves.

    Leaves that receive no cotangent keep ``grad = None``. Without
    ``retain_graph`` (or ``create_graph``, which implies it, as in PyTorch) the
    saved values are released, and a second backward through the same
    recording raises.
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
    given = _seen_owners([ct])
    # create_graph keeps the recording (PyTorch's retain_graph defaults to create_graph): the
    # gradients it records read the saved values when they are differentiated in turn
    cts = vjp_pass(eqns, {id(root): ct}, create_graph=create_graph, release=not (retain_graph or create_graph))
    leaves = {id(v): v for e in eqns for v in e.inputs if v.producer is None and v.const is None}
    if root.producer is None:
        leaves[id(root)] = root
    with enable_grad() if create_graph else no_grad():
        for key, var in leaves.items():
            g = cts.get(key)
            owner = var.owner() if var.owner is not None else None
            if g is None or isinstance(g, Zero) or owner is None:
                continue
            accumulate_grad(owner, _unshared(g, given))


hooks.backward_hook = backward
