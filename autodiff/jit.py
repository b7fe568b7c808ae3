"""``autodiff.jit``: compile a castwise function with JAX/XLA, and the ``castwise export`` command.

``jit(f)`` traces ``f`` into a castwise graph once per input signature (the
dtype and shape of each array argument, the value of each Python scalar
argument, and the active promotion policy: the registered ``Policy`` object, so
a policy registered again under its name traces again), lowers the graph to ``jax.lax``
(``passes.lower_to_jax``), compiles it with ``jax.jit`` and caches the result.
Every call then runs the compiled program and returns castwise Tensors of the
graph's output dtypes (``float32r`` stays ``float32r``; storage is never
reinterpreted) whose arrays are read-only views of XLA's result buffers, as
immutable as JAX arrays (``jit(f, copy=True)``: fresh writable copies).
Because the graph is traced with the same plan eager execution uses, the
compiled program promotes exactly as eager ``f`` would; ``f`` may call
``autodiff.grad``, ``vjp`` or ``jvp`` and the derivative program is compiled
with it.

What is baked in at trace time, as with ``jax.jit``: Python control flow,
Python scalars (they are part of the signature, so a new value retraces), and
arrays ``f`` closes over (the cache keeps the traced graph, which references
them, so an in-place write into such a tensor raises ``InPlaceError`` instead
of going stale silently; a write through another Tensor sharing its memory, a
view or ``detach()``, ticks its version counter, and the next call raises
``SavedValueModifiedError``; arrays the custom functions and rules inside ``f``
close over, which their lowering bakes in, are checked the same way, and so is
the memory that values folded into constants were computed from: ``rt.cos(c)``,
which no recorder sees, is watched as ``c``). What the program could not replay
is refused at the trace (``runtime.core.capture``): a write into an argument
while ``f`` runs, into a constant after the trace read it, and a constant that
holds the arguments' values (an op on ``x.detach()`` or inside ``no_grad()``).

Arguments that are tracked and being recorded (``jit(f)`` called inside
``autodiff.grad`` or ``runtime.trace``) make ``jit`` run ``f`` eagerly, so the
outer recording sees every op and differentiates through it.

A call that repeats a signature with untracked Tensor arguments only is the
per-call path ``__call__``: a flat key (policy, dtypes, shapes), one dict
lookup, the compiled call on the arguments' device buffers, and the results.
The buffers are cached per Tensor while it is unchanged (``autodiff.jit_buffers``,
guarded by the version counters) with ``device_buffers=True``; by default the
NumPy storage goes in, which XLA reads in place when 64-byte aligned and copies
otherwise). Its costs are what is left of the NumPy boundary: one wait for the
execution; one view (or copy) per result.

Keyword arguments, ``static_argnums`` and ``static_argnames`` (as ``jax.jit`` has them) are
split off in ``autodiff.jit_args``; a call with neither keywords nor static positions keeps the
positional key and the per-call path above.

JAX is imported on first use only.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import importlib
import importlib.util
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from autodiff.api import grad
from autodiff.custom import calls_in, captured_arrays
from autodiff.jit_args import bind, resolve_static
from autodiff.jit_buffers import buffers, remember
from autodiff.pytree import leaf_paths, tree_flatten, tree_leaves, tree_unflatten
from passes.lower_jax import export_stablehlo, lower_to_jax, needs_x64
from passes.verify import verify
from runtime.core import hooks, versions
from runtime.core.dtypes import DType
from runtime.core.dtypes import dtype as to_dtype
from runtime.core.executor import asarray
from runtime.core.graph import Captured, Graph, trace_function
from runtime.core.inplace import SavedValueModifiedError
from runtime.core.promotion import _REGISTRY as _policies
from runtime.core.promotion import _STATE as _policy_state
from runtime.core.promotion import get_policy_object, use_policy
from runtime.core.tensor import Tensor

_SCALARS = (bool, int, float, complex)


@dataclass
class _Entry:
    """One cache entry: the traced graph and its compiled program."""

    graph: Graph
    #: ``jax.jit`` of the lowering
    compiled: Any
    #: whether running needs ``jax_enable_x64``
    x64: bool
    #: for each output position of ``f``: its index among the graph outputs, or ``None`` (f returned None)
    layout: list[int | None]
    #: ``"single"``, ``"tuple"`` or ``"list"``: what ``f`` returned; ``"tree"``: any other pytree
    kind: str
    #: output dtypes (castwise's, not the storage's)
    out_dtypes: list[DType] = field(default_factory=list)
    #: output weak flags (``Var.weak``): a weak result is handed back weak, as ``jax.jit`` does
    out_weak: list[bool] = field(default_factory=list)
    #: per output: whether it is handed back as a copy (with ``copy=True``; outputs that are graph
    #: inputs or constants are copied regardless, as XLA may hand back their buffers)
    copied: list[bool] = field(default_factory=list)
    #: seconds spent tracing + lowering, and compiling (first call)
    trace_s: float = 0.0
    compile_s: float | None = None
    #: whether Tensor arguments go in as cached device buffers and results are entered in that cache
    #: (``autodiff.jit_buffers``), or as their NumPy storage
    device_buffers: bool = False
    #: the array Tensors in, what ``f`` returns out: the compiled program and the result wrapping
    run: Callable[[Sequence[Tensor]], Any] | None = None
    #: for ``kind == "tree"``: the structure of what ``f`` returned (its leaves are the graph outputs)
    treedef: Any = None


def _argument(path: str) -> str:
    """The positional argument a leaf path of ``tuple(args)`` is in: ``argument 0, leaf ['w']``."""
    number, rest = path[1:].split("]", 1)
    return f"argument {number}" + (f", leaf {rest}" if rest else "")


def _split(args: Any, where: Callable[[str], str] = _argument) -> tuple[list[Tensor], list[Any], tuple[Any, ...]]:
    """Array leaves of the arguments (a pytree: ``tuple(args)``, or ``jit_args.Bound.tree``) as
    Tensors, the static (Python scalar) ones, and the signature key part (the arguments' structure
    and each leaf's). ``where`` names the argument of a leaf path, for errors."""
    tensors: list[Tensor] = []
    statics: list[Any] = []
    leaves, treedef = tree_flatten(args)
    key: list[Any] = [treedef]
    for i, a in enumerate(leaves):
        if isinstance(a, Tensor):
            tensors.append(a)
            key.append((a.dtype, a._array.shape, a.weak))  # a weak input promotes differently
        elif isinstance(a, _SCALARS):
            statics.append(a)
            # by repr: 0.0 and -0.0 compare equal but must not share an entry; NaN must hit its own
            key.append((type(a), repr(a)))
        elif isinstance(a, np.ndarray | np.generic) or hasattr(a, "__array__"):
            t = asarray(np.asarray(a))
            tensors.append(t)
            key.append((t.dtype, t._array.shape))
        else:
            path = leaf_paths(args)[0][i]
            raise TypeError(f"jit: {where(path)} is a {type(a).__name__}; pass Tensors, arrays or Python scalars")
    return tensors, statics, tuple(key)


class Jitted:
    """A castwise function compiled with JAX per input signature (see ``jit``).

    ``traces`` counts how often ``f`` was traced; ``lower(*args)`` returns the
    graph for ``args``' signature and ``export(*args)`` its StableHLO text.
    ``copy`` is whether results are fresh writable copies (else read-only views
    of XLA's buffers). ``static_argnums`` / ``static_argnames`` are the resolved static
    positions and names (each inferred from the other through ``f``'s signature).
    """

    def __init__(
        self,
        f: Callable[..., Any],
        copy: bool = False,
        verify_graphs: bool = True,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        device_buffers: bool = False,
    ) -> None:
        # name and docstring only: copying f's __dict__ (another Jitted's cache) would share state
        functools.update_wrapper(self, f, updated=())  # type: ignore[arg-type]
        self.f = f
        self.copy = copy
        self.verify_graphs = verify_graphs
        self.device_buffers = device_buffers
        self.traces = 0
        self.static_argnums, self.static_argnames = resolve_static(f, _name(f), static_argnums, static_argnames)
        self._cache: dict[Any, _Entry] = {}
        #: (policy, dtype, shape, dtype, shape, ...) of untracked all-Tensor signatures that ran
        #: once -> the entry's runner (what ``__call__`` looks up)
        self._fast: dict[tuple[Any, ...], Callable[[Sequence[Tensor]], Any]] = {}

    # -- tracing and compiling ----------------------------------------------------------------

    def _entry(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> tuple[_Entry, list[Tensor]]:
        f = self.f
        if kwargs or self.static_argnums:  # keywords or static positions: split the call first
            bound = bind(f, _name(f), self.static_argnums, self.static_argnames, args, kwargs or {})
            tree: Any = bound.tree
            tensors, _, key_args = _split(tree, bound.where)
            key: tuple[Any, ...] = (bound.key, key_args, get_policy_object(), _policy_state.default_float)
            call, where = bound.call, bound.where
        else:  # positional arguments only, none static
            tree = tuple(args)
            tensors, _, key_args = _split(tree)
            # the policy object, not its name: register_policy may replace the policy under a name
            # and the default float set_default_dtype chose (the torch policy reads it while tracing)
            key = (key_args, get_policy_object(), _policy_state.default_float)

            def call(values: tuple[Any, ...]) -> Any:
                return f(*values)

            where = _argument
        entry = self._cache.get(key)
        if entry is None:
            entry = self._trace(tree, tensors, call, where)
            self._cache[key] = entry
        return entry, tensors

    def _trace(
        self, args: Any, tensors: Sequence[Tensor], call_f: Callable[[Any], Any], where: Callable[[str], str]
    ) -> _Entry:
        """Trace ``call_f`` on ``args`` (the pytree of the non-static arguments), lower, compile."""
        import jax

        start = time.perf_counter()
        leaves, in_tree = tree_flatten(args)
        positions = [i for i, a in enumerate(leaves) if not isinstance(a, _SCALARS)]
        shape: dict[str, Any] = {}

        def traced(*xs: Tensor) -> list[Tensor]:
            call = list(leaves)
            for p, x in zip(positions, xs, strict=True):
                call[p] = x
            out = call_f(tree_unflatten(in_tree, call))
            if isinstance(out, Tensor):
                shape["kind"], items = "single", [out]
            elif type(out) in (tuple, list) and all(o is None or isinstance(o, Tensor) for o in out):
                shape["kind"], items = ("tuple" if isinstance(out, tuple) else "list"), list(out)
            else:  # any other pytree: its leaves are the outputs
                items, shape["treedef"] = tree_flatten(out)
                shape["kind"] = "tree"
                for i, item in enumerate(items):
                    if not isinstance(item, Tensor):
                        path = leaf_paths(out)[0][i]
                        where = f" at output leaf {path}" if path else ""
                        raise TypeError(
                            f"jit: f must return a Tensor or a pytree of Tensors; it returned a "
                            f"{type(item).__name__}{where}"
                        )
            layout: list[int | None] = []
            kept: list[Tensor] = []
            for item in items:
                if item is None:
                    layout.append(None)
                elif isinstance(item, Tensor):
                    layout.append(len(kept))
                    kept.append(item)
                else:
                    raise TypeError(f"jit: f returned a {type(item).__name__} among its outputs")
            shape["layout"] = layout
            return kept

        paths = leaf_paths(args)[0]

        def describe(i: int) -> str:  # array leaf i of the arguments, for errors: ``argument 0, leaf ['w']``
            return where(paths[positions[i]])

        graph = trace_function(traced, tensors, f"autodiff.jit({_name(self.f)})", describe)
        self.traces += 1
        if self.verify_graphs:
            verify(graph)
        compiled = jax.jit(lower_to_jax(graph))
        entry = _Entry(
            graph=graph,
            compiled=compiled,
            x64=needs_x64(graph),
            layout=shape["layout"],
            kind=shape["kind"],
            treedef=shape.get("treedef"),
            out_dtypes=[v.dtype for v in graph.outputs],
            out_weak=[v.weak for v in graph.outputs],
            copied=[self.copy or v.producer is None for v in graph.outputs],
            trace_s=time.perf_counter() - start,
            device_buffers=self.device_buffers,
        )
        entry.run = _closure_guard(entry, _runner(entry))
        return entry

    def lower(self, *args: Any, **kwargs: Any) -> Graph:
        """The castwise graph ``f`` traces to for ``args``' signature (traced now if new)."""
        return self._entry(args, kwargs)[0].graph

    def export(self, *args: Any, **kwargs: Any) -> str:
        """The StableHLO text of ``f`` for ``args``' signature."""
        return export_stablehlo(self.lower(*args, **kwargs))

    def jax_function(self, *args: Any, **kwargs: Any) -> Callable[..., list[Any]]:
        """The ``jax.jit``-compiled lowering for ``args``' signature: JAX arrays in, a list of JAX arrays out.

        For staying in JAX (device-resident data, ``jax.sharding``, composing
        with JAX code). Graphs with 64-bit values must be called with x64 on.
        Each call first checks, as ``__call__`` does, that nothing the program
        holds the traced values of was written in place since the trace
        (``SavedValueModifiedError``); under a JAX trace that check runs when JAX
        traces the call.
        """
        entry = self._entry(args, kwargs)[0]
        compiled = entry.compiled
        check = _staleness_check(entry)
        if check is None:
            return compiled  # type: ignore[no-any-return]
        checked = check

        @functools.wraps(compiled)
        def guarded(*arrays: Any) -> list[Any]:
            checked()
            return compiled(*arrays)  # type: ignore[no-any-return]

        return guarded

    def compile_seconds(self, *args: Any, **kwargs: Any) -> float | None:
        """Seconds the first call for ``args``' signature spent in ``jax.jit`` compilation (None before it)."""
        return self._entry(args, kwargs)[0].compile_s

    # -- running --------------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return self._call(args, kwargs)
        # The per-call path of a signature that ran before: a flat key of the policy and each
        # argument's dtype and shape, one dict lookup, the entry's runner. Anything else takes the
        # general path: a Python scalar or a NumPy array (no ``_array``), a tracked tensor (its node
        # is not None: an outer recording may need the ops), a signature not run yet.
        # the active Policy object (as _entry keys; one activated by object is not in the registry)
        key: list[Any] = [_policies.get(_policy_state.name) or get_policy_object(), _policy_state.default_float]
        for a in args:
            try:
                array = a._array
                if a.node is not None:
                    return self._call(args)
                key.append(a.dtype)
                key.append(array.shape)
                if a.weak:
                    key.append(True)  # a weak input promotes differently (nothing else in a key is True)
            except AttributeError:
                return self._call(args)
        run = self._fast.get(tuple(key))
        if run is None:
            return self._call(args)
        return run(args)

    def _call(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> Any:
        if hooks.current_recorder() is not None and any(
            isinstance(a, Tensor) and a.node is not None for a in tree_leaves((tuple(args), kwargs))
        ):
            return self.f(*args, **(kwargs or {}))  # an outer recording must see the ops: run eagerly
        entry, tensors = self._entry(args, kwargs)
        run = entry.run
        assert run is not None
        if entry.compile_s is None:
            start = time.perf_counter()
            result = run(tensors)
            entry.compile_s = time.perf_counter() - start
        else:
            result = run(tensors)
        if not kwargs and not self.static_argnums and all(isinstance(a, Tensor) and a.node is None for a in args):
            # later calls with this signature take the fast path in __call__ (this one compiled the program)
            key: list[Any] = [get_policy_object(), _policy_state.default_float]
            for a in args:
                key.append(a.dtype)
                key.append(a._array.shape)
                if a.weak:
                    key.append(True)
            self._fast[tuple(key)] = run
        return result


def _name(f: Any) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


def _closure_guard(entry: _Entry, run: Callable[[Sequence[Tensor]], Any]) -> Callable[[Sequence[Tensor]], Any]:
    """``run``, checking first that nothing the compiled program holds the trace-time values
    of was written in place since the trace: a constant of the graph (an array ``f`` closes
    over), and the memory a folded constant was computed from (``rt.cos(c)``, or the
    gradient ``c`` of ``sum(x * c)``: ops without a traced operand, which the trace did not
    record; ``runtime.core.capture.Captured``). Running it would silently disagree with
    eager ``f``. The custom functions the graph calls are traced again when it is lowered
    (``jax.custom_jvp`` / ``custom_vjp`` of their own graphs), and what those close over is
    baked in too: the arrays they noted (``custom.captured_arrays``, read at check time, as
    the lowering traces them at the first run) are checked the same way. Every path to the
    compiled program (the first call, the general path, ``__call__``'s cached-signature
    path) runs this. One compare per call while no in-place write happened anywhere (the
    write clock is unchanged)."""
    check = _staleness_check(entry)
    if check is None:
        return run

    def guarded(tensors: Sequence[Tensor]) -> Any:
        check()
        return run(tensors)

    return guarded


def _staleness_check(entry: _Entry) -> Callable[[], None] | None:
    """The check ``_closure_guard`` runs before the compiled program (``SavedValueModifiedError``
    when something it holds was written since the trace); None when there is nothing to check."""
    captured: Captured | None = entry.graph.meta.get("captured")
    calls = calls_in(entry.graph)
    if (captured is None or not captured.watched) and not calls:
        return None
    clock = versions.CLOCK
    traced = clock[0] if captured is None else captured.clock
    checked = [traced]

    where = "autodiff.jit" if captured is None else captured.where

    def stale(what: str, hit: tuple[int, str]) -> SavedValueModifiedError:
        return SavedValueModifiedError(
            f"{where}: {what} was written in place after it was traced (its memory is at version "
            f"{hit[0]} now, {hit[1]} when traced), through a Tensor sharing its memory (a view, "
            "detach(), another asarray of the same NumPy array). The compiled program holds the "
            "traced values, so it would disagree with the eager function. Pass the array as an "
            "argument instead, or write into a copy of it; to use the new values, jit the function "
            "again."
        )

    def check() -> None:
        now = clock[0]
        if now != checked[0]:
            found = None if captured is None else captured.stale()
            if found is not None:
                raise stale(*found)
            for call, owner in captured_arrays(calls):
                hit = versions.written_since(owner, traced)
                if hit is not None:
                    where = f"the {call.kind} function {call.name!r} (its function or rules)"
                    raise stale(f"a {owner.dtype}{list(owner.shape)} array {where} closes over", hit)
            checked[0] = now

    return check


#: the storage of a result Tensor between dispatch and the program's completion (never seen outside
#: ``run``; building the Tensors while XLA computes takes their construction off the critical path)
_PENDING = np.empty(0)


def _runner(entry: _Entry) -> Callable[[Sequence[Tensor]], Any]:
    """The function that runs ``entry``'s compiled program on the array Tensors and returns what ``f`` returned.

    The program gets each Tensor's cached device buffer (``jit_buffers.buffers``: put on the
    device once, reused while the Tensor is unchanged), or its NumPy storage with
    ``device_buffers=False``. Each result that is a view of its own XLA buffer (not a copy) is
    entered in the buffer cache with that ``jax.Array``, so passing it to the next jitted call
    transfers nothing.

    XLA on CPU dispatches asynchronously: the call returns while worker threads
    compute. The result Tensors and their tuple/list are built in that window;
    then each result gets its array, the first conversion waiting for the
    execution: a read-only view of XLA's buffer (``np.asarray``) or, with
    ``copy=True``, a fresh writable copy of it (``np.array``). (An explicit
    ``block_until_ready`` first saves a thread wake-up but was measured to cost
    more than it saves.)
    """
    jitted = entry.compiled
    x64 = entry.x64
    if entry.device_buffers:
        if x64:
            import jax

            def compiled(*tensors: Tensor) -> Sequence[Any]:
                inputs = buffers(tensors, True)
                with jax.enable_x64(True):
                    return jitted(*inputs)  # type: ignore[no-any-return]

        else:

            def compiled(*tensors: Tensor) -> Sequence[Any]:
                return jitted(*buffers(tensors, False))  # type: ignore[no-any-return]

    elif x64:
        import jax

        def compiled(*tensors: Tensor) -> Sequence[Any]:
            with jax.enable_x64(True):
                return jitted(*[t._array for t in tensors])  # type: ignore[no-any-return]

    else:

        def compiled(*tensors: Tensor) -> Sequence[Any]:
            return jitted(*[t._array for t in tensors])  # type: ignore[no-any-return]

    dtypes = entry.out_dtypes
    weak = [i for i, w in enumerate(entry.out_weak) if w]  # (usually none)
    # np.array copies XLA's read-only buffer into a writable array; np.asarray is a view of it
    convs = [np.array if fresh else np.asarray for fresh in entry.copied]
    # results entered in the buffer cache with their jax.Array: the views (copies have no buffer)
    kept = [i for i, fresh in enumerate(entry.copied) if not fresh] if entry.device_buffers else []
    kind, layout = entry.kind, entry.layout
    pending = _PENDING

    if kind == "tree":  # a pytree other than a Tensor or a flat tuple/list
        treedef = entry.treedef

        def run_tree(tensors: Sequence[Tensor]) -> Any:
            outs = compiled(*tensors)
            results = [Tensor(pending, d) for d in dtypes]
            for t, conv, o in zip(results, convs, outs, strict=True):
                t._array = conv(o)
            for i in kept:
                remember(results[i], outs[i])
            for i in weak:
                results[i].weak = True
            return tree_unflatten(treedef, results)

        return run_tree

    if not dtypes:  # f returned only Nones (or nothing)

        def run_nothing(tensors: Sequence[Tensor]) -> Any:
            compiled(*tensors)
            items = [None] * len(layout)
            return tuple(items) if kind == "tuple" else items

        return run_nothing

    if layout == list(range(len(dtypes))):  # no None among the outputs: the results are what f returned
        if kind == "single":
            (d0,), (conv0,) = dtypes, convs

            keep0 = bool(kept)

            def run_single(tensors: Sequence[Tensor]) -> Any:
                (out,) = compiled(*tensors)
                result = Tensor(pending, d0)
                result._array = conv0(out)
                if keep0:
                    remember(result, out)
                if weak:
                    result.weak = True
                return result

            return run_single

        def run_sequence(tensors: Sequence[Tensor]) -> Any:
            outs = compiled(*tensors)
            results = [Tensor(pending, d) for d in dtypes]
            packed = tuple(results) if kind == "tuple" else results
            for t, conv, o in zip(results, convs, outs):  # noqa: B905
                t._array = conv(o)
            for i in kept:
                remember(results[i], outs[i])
            for i in weak:
                results[i].weak = True
            return packed

        return run_sequence

    def run(tensors: Sequence[Tensor]) -> Any:
        outs = compiled(*tensors)
        results = [Tensor(pending, d) for d in dtypes]
        items = [None if i is None else results[i] for i in layout]
        for t, conv, o in zip(results, convs, outs, strict=True):
            t._array = conv(o)
        for i in kept:
            remember(results[i], outs[i])
        for i in weak:
            results[i].weak = True
        if kind == "single":
            return items[0]
        return tuple(items) if kind == "tuple" else items

    return run


def jit(
    f: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    copy: bool = False,
    device_buffers: bool = False,
) -> Jitted:
    """Compile ``f`` (pytrees of Tensors in and out) with JAX, once per signature.

    The signature is the arguments' pytree structure (keyword arguments
    included), the dtype and shape of each array leaf, the value of each Python
    scalar leaf, the value of each static argument, and the active promotion
    policy. ``static_argnums`` (an int or a sequence; negative counts from the
    end of the call's positional arguments) and ``static_argnames`` (a str or a
    sequence) name arguments passed to ``f`` as they are, not traced, as with
    ``jax.jit``: each is inferred from the other through ``f``'s signature, the
    values must be hashable, and a new value (by type and ``==``) traces again.
    Keyword arguments are traced like positional ones unless static. The traced
    graph is verified, lowered to ``jax.lax`` and compiled with ``jax.jit``;
    results come back as castwise Tensors of the graph's output dtypes.

    By default (``copy=False``) a result's array is a read-only view of the
    buffer XLA computed it into: no copy (on CPU), and, like a JAX array, it
    cannot be changed: an in-place write (``r += 1``, ``r.numpy()[0] = 1``)
    raises NumPy's read-only ``ValueError``; out-of-place ops, autodiff and
    passing it back to a jitted function work as with any Tensor. The buffer
    belongs to that result alone (a new one per call; results that are
    arguments or constants of ``f`` are copied). ``copy=True`` returns fresh,
    writable NumPy arrays instead, at the cost of one copy per result.

    With ``device_buffers=True`` (opt-in) a Tensor argument is put on the
    device once and its ``jax.Array`` reused by later calls while the Tensor is
    unchanged (same storage, same version counter: an in-place write through
    castwise, through any view, puts it again), and each result's XLA buffer is
    kept with it, so a result passed back in is not transferred
    (``autodiff.jit_buffers``; a freed Tensor releases its buffer). Writes
    castwise cannot count, into a NumPy array the user wrapped and still
    writes, are not seen: write through castwise, or ``jit_buffers.forget(t)``.
    That is why it is not the default: the default call reads each argument's
    NumPy storage, which XLA on the CPU reads in place when it is 64-byte aligned,
    so it always sees what eager execution sees.

    ``f`` may return ``None`` among its outputs (``vjp``'s cotangent for an
    integer input); it is passed through.

    >>> import numpy as np, runtime as rt, autodiff
    >>> f = autodiff.jit(autodiff.grad(lambda x: rt.lax.reduce_sum(rt.tanh(x), (0,))))
    >>> f(rt.asarray(np.zeros(3, np.float32))).numpy()
    array([1., 1., 1.], dtype=float32)
    """
    return Jitted(
        f, copy=copy, static_argnums=static_argnums, static_argnames=static_argnames, device_buffers=device_buffers
    )


# -- the ``castwise export`` command ----------------------------------------------------------------

_SPEC = re.compile(r"^(?P<dtype>[A-Za-z0-9_]+)\[(?P<dims>[0-9,\s]*)\]$")


def parse_arg_spec(spec: str) -> Any:
    """An example argument from a command-line spec.

    ``f32[64,128]`` (any castwise dtype name or short name; ``i32[]`` is 0-d)
    gives a Tensor of zeros; a Python literal (``2``, ``0.5``, ``True``) gives
    that scalar, which becomes part of the signature.
    """
    match = _SPEC.match(spec.strip())
    if match:
        dtype = to_dtype(match["dtype"])
        dims = tuple(int(n) for n in match["dims"].replace(" ", "").split(",") if n)
        return Tensor(np.zeros(dims, dtype.storage), dtype)
    try:
        value = ast.literal_eval(spec)
    except (ValueError, SyntaxError):
        raise ValueError(f"bad argument spec {spec!r}: use dtype[dims] (f32[3,4], i64[]) or a Python scalar") from None
    if not isinstance(value, _SCALARS):
        raise ValueError(f"bad argument spec {spec!r}: only Python scalars are accepted as literals")
    return value


def load_function(target: str) -> Callable[..., Any]:
    """``module.path:function`` or ``path/to/file.py:function`` -> the function."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"bad target {target!r}: use module:function or file.py:function")
    if module_name.endswith(".py") or "/" in module_name:
        path = Path(module_name)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise ValueError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{target} is not callable")
    return obj  # type: ignore[no-any-return]


def export_command(args: argparse.Namespace) -> int:
    """``castwise export``: trace a function, lower it, print its StableHLO (or its graph)."""
    try:
        fn = load_function(args.target)
        examples = [parse_arg_spec(s) for s in args.arg]
    except (ValueError, ImportError, AttributeError, OSError) as err:
        print(f"castwise export: {err}", file=sys.stderr)
        return 2
    if args.grad is not None:
        nums = tuple(int(n) for n in args.grad.split(",") if n.strip())
        fn = grad(fn, argnums=nums[0] if len(nums) == 1 else nums)
    policy = use_policy(args.policy) if args.policy else contextlib.nullcontext()
    try:
        with policy:
            graph = Jitted(fn).lower(*examples)
            text = str(graph) if args.format == "graph" else export_stablehlo(graph)
    except (TypeError, ValueError, RuntimeError) as err:  # promotion, shape, lowering errors
        print(f"castwise export: {args.target}: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).write_text(text + "\n")
    else:
        print(text)
    return 0


def add_export_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``export`` sub-command to the ``castwise`` parser's ``subparsers``."""
    from runtime.core.promotion import policies

    p: argparse.ArgumentParser = subparsers.add_parser(
        "export",
        help="trace a castwise function and print its StableHLO (via JAX)",
        description="Trace TARGET on example arguments, lower the graph to jax.lax and print its StableHLO "
        "text (or the castwise graph with --format graph).",
    )
    p.add_argument("target", help="module:function or path/to/file.py:function")
    p.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="SPEC",
        help="one per argument, in order: dtype[dims] (f32[64,128], i64[] for 0-d) or a Python scalar",
    )
    p.add_argument("--grad", nargs="?", const="0", metavar="ARGNUMS",
                   help="export the gradient with respect to ARGNUMS (comma-separated, default 0)")  # fmt: skip
    p.add_argument("--policy", choices=policies(), help="promotion policy to trace under (default: the active one)")
    p.add_argument("--format", choices=("stablehlo", "graph"), default="stablehlo")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(func=export_command)
    return p
