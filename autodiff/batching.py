"""``autodiff.vmap``: batching over the recorded semantic graph.

``vmap(f)(xs)`` records ``f`` once on one example (the first slice of each
mapped argument, a tracked leaf), then replays the recorded equations on the
whole batch, each through its batching rule (``autodiff.batching_rules``).
The recording already holds every implicit promotion as a ``convert``
equation computed by the plan eager execution uses, so the replay runs every
op on operands of the dtypes the unbatched op planned: a batched operand
keeps its dtype, and converts appear exactly where they would without vmap
(the promotion of an array ``f`` closes over included: ``_converted_const``).

The replay goes through the eager executor, so it composes with everything
that records: under ``grad`` / ``vjp`` / ``jvp`` (a tracked batched argument,
or a tracked value ``f`` closes over) the batched ops are recorded like any
other; under ``jit`` they are traced and compiled; ``vmap`` of ``vmap`` nests.
``f`` may itself call ``grad``, ``jvp``, ``jit`` or ``vmap``: their work is
recorded on the example and batched with the rest.

Arguments and results are pytrees (``autodiff.pytree``): ``in_axes`` and
``out_axes`` are tree prefixes of them, as ``jax.vmap`` reads its own, and
every error names the leaf at fault by its path.

As with ``jax.jit``, a recorded value turned into a Python or NumPy value (``bool``,
``float``, ``.numpy()``, ``.item()``: Python control flow on it too) raises
``ConcretizationError`` instead of giving every example the first one's. The recording is
checked before it is replayed (``runtime.core.capture``): a value computed from
a mapped argument outside the recording (``detach()``, ``no_grad`` blocks) that
the replay would hold as a constant, the first example's for every example,
raises ``TracedConstantError``, and so does an in-place write the replay could
not reproduce.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optree

from autodiff.batching_rules import BATCH_RULES, broadcast_batch, move_batch_dim
from autodiff.pytree import NAMESPACE, TreeDef, leaf_paths, tree_flatten, tree_leaves, tree_unflatten
from autodiff.record import FRESH_INPUTS
from runtime.core import hooks, ops, versions
from runtime.core.capture import check_capture
from runtime.core.errors import CastwiseError
from runtime.core.executor import apply, asarray
from runtime.core.graph import Eqn, Var, emit, new_leaf, primal_value, record_holding_all
from runtime.core.tensor import Tensor

__all__ = ["VmapError", "vmap"]

Axis = int | None


class VmapError(CastwiseError, ValueError):
    """A ``vmap`` call is malformed: in_axes / out_axes, batch sizes, argument kinds."""


# -- arguments and results: in_axes / out_axes as tree prefixes ---------------------------------------


def _is_axis(a: Any) -> bool:
    """An axis spec's leaf: an int (not a bool) or None, as ``jax.vmap`` accepts."""
    if a is None or type(a) is int:
        return True
    return isinstance(a, int | np.integer) and not isinstance(a, bool | np.bool_)


def _entry(node: Any, entry: Any) -> str:
    """One step of a path, written as ``keystr`` writes it: ``['w']``, ``[1]``, ``.field``."""
    if isinstance(node, dict):
        return f"[{entry!r}]"
    if isinstance(node, tuple) and hasattr(node, "_fields"):
        return f".{node._fields[entry]}"
    return f"[{entry}]"


def _one_level(tree: Any) -> tuple[list[Any], Any, tuple[Any, ...]] | None:
    """``tree``'s children, node metadata and entries; None when it is a leaf."""
    if tree is None:
        return [], None, ()
    try:
        children, meta, entries, _ = optree.tree_flatten_one_level(tree, namespace=NAMESPACE)
    except ValueError:
        return None
    return list(children), meta, tuple(entries)


def _node_kind(tree: Any) -> str:
    if tree is None:
        return "None"
    if isinstance(tree, dict):
        return f"a dict with keys {sorted(tree, key=repr)}"
    if isinstance(tree, tuple | list):
        return f"a {type(tree).__name__} of {len(tree)}"
    if isinstance(tree, Tensor):
        return f"an array {_describe(tree)}"
    return f"a {type(tree).__name__}"


def _check_spec(spec: Any, what: str, path: str = "") -> None:
    """Every leaf of an axis spec is an int or None (``VmapError`` naming the path otherwise)."""
    if _is_axis(spec):
        return
    level = _one_level(spec)
    if level is None:
        raise VmapError(f"vmap: {what}{path} must be an int or None, got {spec!r}")
    for child, entry in zip(level[0], level[2], strict=True):
        _check_spec(child, what, path + _entry(spec, entry))


def _spread(spec: Any, tree: Any, what: str, whose: str, path: str, out: list[Axis]) -> None:
    """Append to ``out`` one axis per leaf of ``tree``: ``spec`` is a tree prefix of ``tree``
    (an int or None applies to every leaf of the subtree it stands at), as ``jax.vmap`` reads
    ``in_axes`` and ``out_axes``."""
    if _is_axis(spec):
        out.extend([None if spec is None else int(spec)] * len(tree_leaves(tree)))
        return
    spec_level, tree_level = _one_level(spec), _one_level(tree)
    assert spec_level is not None  # _check_spec ran first
    if tree_level is None or type(spec) is not type(tree) or spec_level[1:] != tree_level[1:]:
        raise VmapError(
            f"vmap: {what} is not a tree prefix of {whose}: at {what}{path} it is {_node_kind(spec)} "
            f"but {whose}{path} is {_node_kind(tree)}"
        )
    for s, t, entry in zip(spec_level[0], tree_level[0], spec_level[2], strict=True):
        _spread(s, t, what, whose, path + _entry(spec, entry), out)


def _in_axes_per_leaf(in_axes: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Axis]:
    """One axis per leaf of ``(args, kwargs)``: ``in_axes`` for the positional arguments (a tuple
    has one entry per argument), axis 0 for every keyword argument, as in ``jax.vmap``."""
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
        raise VmapError(
            f"vmap: in_axes has {len(in_axes)} entries but there are {len(args)} arguments; "
            "give one entry (an int, None, or a tree of them) per positional argument, or one int or None for all"
        )
    axes: list[Axis] = []
    _spread(in_axes, args, "in_axes", "the arguments", "", axes)
    _spread(0, kwargs, "in_axes", "the keyword arguments", "", axes)
    return axes


def _leaf_name(args: tuple[Any, ...], kwargs: dict[str, Any], index: int) -> str:
    """``argument 1, leaf ['w'][0]``: where leaf ``index`` of ``(args, kwargs)`` sits."""
    paths = leaf_paths(args)[0]
    if index < len(paths):
        m = re.match(r"\[(\d+)\]", paths[index])
        assert m is not None
        rest = paths[index][m.end() :]
        return f"argument {m.group(1)}" + (f", leaf {rest}" if rest else "")
    path = leaf_paths(kwargs)[0][index - len(paths)]
    m = re.match(r"\[('[^']*'|\"[^\"]*\")\]", path)
    assert m is not None
    rest = path[m.end() :]
    return f"keyword argument {m.group(1)}" + (f", leaf {rest}" if rest else "")


def _in_axes_name(in_axes: Any, args: tuple[Any, ...], index: int) -> str:
    """``in_axes[1]['w']``: the spec position that gave leaf ``index`` its axis (``in_axes`` itself
    when it is one int for every leaf)."""
    paths = leaf_paths(args)[0]
    if index >= len(paths):
        return "in_axes (keyword arguments: 0)"
    return "in_axes" if _is_axis(in_axes) else f"in_axes{paths[index]}"


def _output_name(path: str) -> str:
    return f"output {path}" if path else "the output"


def _name(f: Any) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


def _describe(x: Tensor) -> str:
    return f"{x.dtype.short}[{','.join(map(str, x.shape))}]"


# -- recording f on one example ------------------------------------------------------------------------------


#: what a recorded value is to the replay (``_classify``)
INNER, OUTER, CONST = 0, 1, 2


def _classify(roots: Sequence[Var], leaves: Sequence[Var]) -> tuple[list[Eqn], dict[int, int], list[Var]]:
    """The equations between ``leaves`` and ``roots`` that depend on a leaf, in order.

    Every value seen is ``INNER`` (it depends on a leaf: batched), ``OUTER`` (a
    value of an enclosing recording that ``f`` closed over, or computed from
    one: a tracked parameter under ``grad``, a traced value under an outer
    ``vmap``), or ``CONST`` (computed from constants only, such as the
    ``convert`` of a closed-over array). The replay uses the last two as they
    are. Returns the equations, ``id(var) -> kind``, and the values seen (held,
    so their ids stay unique while in use).
    """
    kind: dict[int, int] = {id(v): INNER for v in leaves}
    held: list[Var] = list(leaves)
    order: list[Eqn] = []
    for root in roots:
        stack: list[tuple[Var, bool]] = [(root, False)]
        while stack:
            var, expanded = stack.pop()
            if id(var) in kind:
                continue
            eqn = var.producer
            if eqn is None or var in FRESH_INPUTS:
                # a leaf, or an enclosing transform's input (a recorded convert of a constant,
                # autodiff.api): that transform differentiates with respect to it
                kind[id(var)] = CONST if var.const is not None else OUTER
                held.append(var)
                continue
            if not expanded:
                stack.append((var, True))
                stack.extend((v, False) for v in eqn.inputs if id(v) not in kind)
                continue
            k = min(kind[id(v)] for v in eqn.inputs)
            for out in eqn.outputs:
                kind[id(out)] = k
                held.append(out)
            if k == INNER:
                order.append(eqn)
    return order, kind, held


def _outer_tensor(var: Var, kind: int) -> Tensor:
    """A value the replay does not batch, as a Tensor: tracked on its own recording if ``OUTER``."""
    if var.const is not None:
        c = Tensor(var.const, var.dtype)
        c.weak = var.weak
        return c
    t = Tensor(primal_value(var), var.dtype)
    t.weak = var.weak
    if kind == OUTER:
        t.node = var
        t._requires_grad = var.dtype.is_inexact
    return t


def _converted_const(var: Var, value: Tensor) -> Tensor:
    """``value``, or, when ``var`` is the ``convert`` of a constant that the recording wrote for a
    promoting op, ``value`` tracked through a new such ``convert``: a recorded replay then writes the
    promotion down as eager recording does (``convert`` of the constant, then the op), instead of a
    constant of the converted dtype."""
    eqn = var.producer
    if eqn is None or eqn.op is not ops.convert or value.node is not None or eqn.inputs[0].const is None:
        return value
    out = emit(ops.convert, eqn.inputs, eqn.params).outputs[0]
    out.value = value._array
    t = Tensor(value._array, value.dtype)
    t.node = out
    t._requires_grad = value.dtype.is_inexact
    return t


# -- the replay ----------------------------------------------------------------------------------------------------


def _replay(
    eqns: Sequence[Eqn], env: dict[int, tuple[Tensor, Axis]], kind: dict[int, int], keep: Sequence[Var]
) -> None:
    """Run ``eqns`` on batched values: each through its op's batching rule.

    A batched intermediate is dropped after its last use (``keep``: the values
    wanted at the end), so its memory goes back to the allocator while the
    replay runs and the next result reuses it, warm, instead of the process
    faulting in fresh pages for every op (measured: most of a replay's time
    for a chain of small ops, without this).
    """
    last: dict[int, int] = {}
    for i, eqn in enumerate(eqns):
        for v in eqn.inputs:
            last[id(v)] = i
    for v in keep:
        last[id(v)] = len(eqns)
    dead: list[list[int]] = [[] for _ in eqns]
    for key, i in last.items():
        if i < len(eqns):
            dead[i].append(key)
    for i, eqn in enumerate(eqns):
        args: list[Tensor] = []
        dims: list[Axis] = []
        for v in eqn.inputs:
            found = env.get(id(v))
            if found is None:  # not batched: a constant or a value of an enclosing recording
                found = (_outer_tensor(v, kind[id(v)]), None)
                env[id(v)] = found
            args.append(found[0])
            dims.append(found[1])
        if hooks.current_recorder() is not None and any(a.node is not None for a in args):
            args = [_converted_const(v, a) for v, a in zip(eqn.inputs, args, strict=True)]
        if all(d is None for d in dims):  # only unmapped arguments reach it: it runs as it is
            result = apply(eqn.op, tuple(args), eqn.params)
            outs = list(result) if isinstance(result, tuple) else [result]
            out_dims: list[Axis] = [None] * len(outs)
        else:
            outs, out_dims = BATCH_RULES[eqn.op.name](eqn.op, args, dims, eqn.params)
        del args
        for var, out, d in zip(eqn.outputs, outs, out_dims, strict=True):
            env[id(var)] = (out, d)
        del outs
        for key in dead[i]:
            env.pop(key, None)


def _batch_sizes(
    leaves: Sequence[Any],
    axes: Sequence[Axis],
    name: Callable[[int], str],
    in_axes_name: Callable[[int], str],
    axis_size: int | None,
) -> tuple[list[Any], int]:
    """Mapped leaves as Tensors (the others as they came) and the batch size, or a ``VmapError``
    naming each leaf by its path."""
    values: list[Any] = []
    sizes: list[tuple[int, int, int, Tensor]] = []
    for i, (a, axis) in enumerate(zip(leaves, axes, strict=True)):
        if axis is None:
            values.append(a)
            continue
        if not isinstance(a, Tensor):
            if isinstance(a, (bool, int, float, complex)) or not hasattr(a, "__array__"):
                raise VmapError(
                    f"vmap: {name(i)} is a {type(a).__name__}, which has no axis to map ({in_axes_name(i)} = "
                    f"{axis}); pass a Tensor or an array, or give it in_axes None"
                )
            a = asarray(np.asarray(a))
        if not -a.ndim <= axis < a.ndim:
            raise VmapError(
                f"vmap: {in_axes_name(i)} = {axis} is out of range for {name(i)} of shape {_describe(a)} "
                f"(rank {a.ndim})"
            )
        axis %= a.ndim
        values.append(a)
        sizes.append((i, axis, a.shape[axis], a))
    if not sizes and axis_size is None:
        raise VmapError(
            "vmap: in_axes maps no argument (all None) and axis_size is not given; map at least one array "
            "with an int axis, or pass axis_size"
        )
    found = {s for _, _, s, _ in sizes} | ({axis_size} if axis_size is not None else set())
    if len(found) > 1:
        listing = [f"axis_size is {axis_size}"] if axis_size is not None else []
        listing += [f"{name(i)} has size {s} along axis {ax} (shape {_describe(t)})" for i, ax, s, t in sizes]
        raise VmapError(f"vmap: the mapped axes have different sizes: {'; '.join(listing)}")
    return values, found.pop()


def _example(x: Tensor, axis: int, size: int) -> Tensor:
    """The first example of ``x`` along ``axis`` (zeros for an empty batch), a fresh array with
    ``x``'s weak flag (``jax.vmap`` maps a weak array to weak examples)."""
    if size == 0:
        shape = x.shape[:axis] + x.shape[axis + 1 :]
        out = Tensor(np.zeros(shape, x.dtype.storage), x.dtype)
    else:
        out = Tensor(np.take(x._array, 0, axis=axis), x.dtype)
    out.weak = x.weak
    return out


def _move_out(x: Tensor, d: Axis, dst: Axis, size: int, paths: Callable[[int], str], i: int) -> Tensor:
    """Output leaf ``i`` with its batch dimension at ``dst`` (broadcast there when it has none);
    ``paths(i)`` is its path, for errors."""
    if dst is None:
        if d is not None:
            path = paths(i)
            raise VmapError(
                f"vmap: {_output_name(path)} ({_describe(x)}) depends on the mapped arguments, "
                f"but out_axes{path} is None"
            )
        return x
    rank = x.ndim + (d is None)
    if not -rank <= dst < rank:
        path = paths(i)
        raise VmapError(
            f"vmap: out_axes{path} = {dst} is out of range for {_output_name(path)} of rank {rank} (batched)"
        )
    dst %= rank
    return broadcast_batch(x, size, dst) if d is None else move_batch_dim(x, d, dst)


def _output_leaves(result: Any) -> tuple[list[Tensor], TreeDef | None, list[str]]:
    """``f``'s result as Tensor leaves (arrays and Python scalars converted), its structure (None
    for a bare Tensor), and each leaf's path (a ``VmapError`` naming the path of a leaf that is
    not an array)."""
    if type(result) is Tensor:
        return [result], None, [""]
    leaves, treedef = tree_flatten(result)
    if all(type(o) is Tensor for o in leaves):
        return leaves, treedef, []
    paths = leaf_paths(result)[0]
    out = []
    for o, path in zip(leaves, paths, strict=True):
        if not isinstance(o, Tensor):
            if not (isinstance(o, (bool, int, float, complex, np.ndarray, np.generic)) or hasattr(o, "__array__")):
                raise VmapError(f"vmap: f must return arrays; {_output_name(path)} is a {type(o).__name__}")
            o = asarray(o)
        out.append(o)
    return out, treedef, paths


def vmap(
    f: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None
) -> Callable[..., Any]:
    """Vectorise ``f`` over an axis of its arguments: ``vmap(f)(xs)[i] == f(xs[i])``.

    ``in_axes`` is a tree prefix of the positional arguments, as in
    ``jax.vmap``: an int (the mapped axis of every array), None (not mapped:
    passed to every example as it is), or a tuple with one entry per
    positional argument, each an int, None, or a nested dict / tuple / list /
    namedtuple of them matching the argument's structure (a list at the top
    is read as a tuple). Keyword arguments are mapped along axis 0.
    ``out_axes`` is a tree prefix of ``f``'s result the same way: where each
    output leaf's batch axis goes; None only for leaves that do not depend on
    a mapped argument. Negative axes count from the end. ``axis_size`` gives
    the batch size when no argument is mapped (the outputs are then
    broadcast), and must agree with the mapped axes otherwise. Unmapped
    leaves may be anything ``f`` accepts (Python scalars, strings, Tensors
    closed over as they are).

    ``f`` is recorded once, on the first example, and the recording is
    replayed on the batch with one batching rule per op
    (``autodiff.batching_rules.BATCH_RULES``); a batched operand keeps its
    dtype, so each op promotes exactly as it does without vmap.

    >>> import numpy as np, runtime as rt, autodiff
    >>> xs = rt.asarray(np.arange(6.0).reshape(3, 2))
    >>> autodiff.vmap(lambda x: rt.lax.reduce_sum(x * x, (0,)))(xs).numpy()
    array([ 1., 13., 41.])
    """
    if isinstance(in_axes, list):  # a list of per-argument entries means the tuple, as in jax.vmap
        in_axes = tuple(in_axes)
    if not (_is_axis(in_axes) or isinstance(in_axes, tuple)):
        raise VmapError(
            "vmap: in_axes must be an int, None, or a tuple/list with one entry per positional argument, "
            f"got {in_axes!r}"
        )
    _check_spec(in_axes, "in_axes")
    _check_spec(out_axes, "out_axes")
    if axis_size is not None and (not _is_axis(axis_size) or axis_size < 0):
        raise VmapError(f"vmap: axis_size must be a non-negative int, got {axis_size!r}")

    @functools.wraps(f)
    def batched(*args: Any, **kwargs: Any) -> Any:
        # the common case, positional Tensors only, skips the pytree walks (measured: 4 us a call)
        plain = not kwargs and all(type(a) is Tensor for a in args)
        flat, in_tree = (list(args), None) if plain else tree_flatten((args, kwargs))
        if _is_axis(in_axes) and not kwargs:  # the common case: one axis for every leaf
            axes: list[Axis] = [None if in_axes is None else int(in_axes)] * len(flat)
        else:
            axes = _in_axes_per_leaf(in_axes, args, kwargs)
        values, size = _batch_sizes(
            flat, axes, lambda i: _leaf_name(args, kwargs, i), lambda i: _in_axes_name(in_axes, args, i), axis_size
        )
        axes = [None if a is None else a % v.ndim for a, v in zip(axes, values, strict=True)]
        # Record f on one example. Every Tensor leaf becomes a fresh tracked leaf (a mapped one its
        # first slice), so what f does with it is recorded, and a transform inside f sees its inputs
        # tracked (``grad`` then records its derivative work, which the replay batches).
        call: list[Any] = []
        leaves: list[Var] = []
        arguments: list[tuple[str, Var]] = []  # (for errors) each leaf's path
        mapped: list[Var] = []
        env: dict[int, tuple[Tensor, Axis]] = {}
        for i, (v, axis) in enumerate(zip(values, axes, strict=True)):
            if axis is None and not isinstance(v, Tensor):
                call.append(v)  # a Python scalar or anything else f accepts: as it is
                continue
            example = _example(v, axis, size) if axis is not None else v.detach()
            leaf = new_leaf(example)
            leaves.append(leaf)
            arguments.append((_leaf_name(args, kwargs, i) if in_tree is not None else f"argument {i}", leaf))
            if axis is not None:
                mapped.append(leaf)
            env[id(leaf)] = (v, axis)
            call.append(example)
        call_args, call_kwargs = (call, {}) if in_tree is None else tree_unflatten(in_tree, call)
        start = versions.CLOCK[0]
        with versions.folding() as fold:
            for leaf in leaves:  # (an unmapped argument is every example's: what it computes may be folded)
                assert leaf.value is not None
                if env[id(leaf)][1] is None:
                    fold.note_fixed(leaf.value)
                else:
                    fold.note_traced(leaf.value)
            with hooks.recorder_override(record_holding_all):
                result = f(*call_args, **call_kwargs)
        outs, out_tree, paths = _output_leaves(result)
        roots = [o.node for o in outs if o.node is not None]
        eqns, kind, held = _classify(roots, leaves)
        # the replay reads what the recording captured as it is now: nothing may have changed under it
        check_capture(
            f"autodiff.vmap({_name(f)})", eqns, arguments, roots, start, fold, varying=mapped,
            held=[o._array for o in outs if o.node is None], per="example",
            given=[v for v, a in zip(values, axes, strict=True) if a is None and isinstance(v, Tensor)],
        )  # fmt: skip
        # replay on the batch
        _replay(eqns, env, kind, roots)
        results = []
        for o in outs:
            if o.node is not None and kind.get(id(o.node)) == INNER:
                results.append(env[id(o.node)])
            else:
                results.append((o, None))  # depends on no mapped argument: the recorded value is every example's
        del held
        if _is_axis(out_axes):
            dsts: list[Axis] = [None if out_axes is None else int(out_axes)] * len(outs)
        else:
            dsts = []
            shape = 0 if out_tree is None else tree_unflatten(out_tree, [0] * len(outs))
            _spread(out_axes, shape, "out_axes", "the output", "", dsts)

        def path(i: int) -> str:  # for error messages only
            if paths:
                return paths[i]
            assert out_tree is not None
            return leaf_paths(tree_unflatten(out_tree, [0] * len(outs)))[0][i]

        moved = [_move_out(x, d, dst, size, path, i) for i, ((x, d), dst) in enumerate(zip(results, dsts, strict=True))]
        return moved[0] if out_tree is None else tree_unflatten(out_tree, moved)

    return batched
