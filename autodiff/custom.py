"""Custom derivative rules: ``custom_jvp`` and ``custom_vjp``, with JAX's interface.

::

    @autodiff.custom_jvp
    def softplus(x):
        return rt.log1p(rt.exp(x))

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), rt.lax.mul(t, rt.lax.logistic(x))

Called on untracked inputs, a custom function is just ``fun``. Called while
recording (a tracked input: ``grad``, ``vjp``, ``jvp``, ``runtime.trace``,
``jit``), it runs once eagerly and is recorded as **one equation**,
``custom_jvp_call`` or ``custom_vjp_call``, whose params carry the function
and its rule as flat callables (operand Tensors in, lists of Tensors out; the
pytree structure and ``nondiff_argnums`` are closed over). The equation

* replays: its kernel runs ``fun`` with recording off;
* differentiates: ``custom_jvp_call``'s JVP is the user's rule, its VJP the
  transpose of that rule's tangent map (recorded and pulled back, as JAX
  transposes a linear JVP); ``custom_vjp_call``'s VJP is the user's ``bwd``
  on the residuals ``fwd`` saved, and it has no forward mode (as in JAX);
* lowers to ``jax.custom_jvp`` / ``jax.custom_vjp`` (``passes.lower_jax``);
* batches through the same params: ``fun``, ``jvp``, ``fwd`` and ``bwd`` take
  and return whole operands, so a batching rule can call them on batched
  Tensors and record a new call.

Reverse-mode rules follow castwise's complex convention (PyTorch's): ``bwd``
maps a cotangent ``ct`` of a holomorphic ``f`` to ``ct * conj(f'(z))``. The
lowering converts it for JAX (``conj(bwd(conj(ct)))``).

``autodiff.testing.check_grads`` checks a custom rule against finite
differences and names the custom function when they disagree.

What a rule reads besides its arguments is held to the version counters
(``runtime.core.versions``) as saved values are: ``fwd``'s residuals are checked
before a backward pass (``engine.PARAM_READS``), and a JVP rule, ``bwd`` or a
re-run ``fwd`` that runs after an in-place write anywhere runs watched
(``_user_run``): an array it closes over that was written after the call was
recorded raises ``SavedValueModifiedError``. Traced (``jit``'s lowering), the
functions note the arrays they close over (``_Call.captured``), which
``autodiff.jit``'s closure guard checks on every call (``captured_arrays``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from autodiff.api import _output_leaves, tensor_leaves
from autodiff.engine import PARAM_READS, reachable_eqns, vjp_pass
from autodiff.pytree import TreeDef, flatten_up_to, tree_flatten, tree_structure, tree_unflatten
from autodiff.record import enable_grad, is_recording
from autodiff.rules import JVP_RULES, VJP_RULES, VJP_SAVES
from autodiff.zeros import TangentLike, Zero, instantiate
from runtime.core import hooks, ops, versions
from runtime.core.errors import CastwiseError
from runtime.core.graph import PRINT_RULES, Graph, Var, new_leaf, record_holding_all, record_op
from runtime.core.inplace import SavedValueModifiedError
from runtime.core.tensor import Tensor

__all__ = ["CustomRuleError", "CustomVJPForwardError", "custom_jvp", "custom_vjp"]

Aval = tuple[Any, tuple[int, ...]]


class CustomRuleError(CastwiseError, TypeError):
    """A custom derivative rule returned something of the wrong structure, dtype or shape."""


class CustomClosureError(CustomRuleError):
    """A custom function's primal computation reads a tracked value that is not one of its
    arguments (it closes over a value being differentiated): the recorded call could not carry
    that dependence, so its derivative would silently miss it (JAX raises here too)."""


class CustomVJPForwardError(CastwiseError, TypeError):
    """Forward mode reached a ``custom_vjp`` function (its rule is reverse mode only, as in JAX)."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"can't apply forward-mode autodiff (jvp) to the custom_vjp function {name!r}: its rule is "
            "reverse mode only (as in JAX); differentiate it with grad/vjp/jacrev, check it with "
            "check_grads(..., modes=('rev',)), or give it a custom_jvp rule"
        )
        self.name = name


# -- calling a custom function --------------------------------------------------------------------


def _avals(xs: Sequence[Tensor]) -> tuple[Aval, ...]:
    return tuple((x.dtype, tuple(x.shape)) for x in xs)


def _describe(avals: Sequence[Aval]) -> str:
    return " ".join(f"{d.short}{list(s)}" for d, s in avals) or "nothing"


class _Call:
    """One call of a custom function: its arguments split into static (``nondiff_argnums``) and
    differentiable pytrees, and the flat views of the user's functions."""

    def __init__(self, kind: str, name: str, fun: Callable[..., Any], args: Sequence[Any], nondiff: Sequence[int]):
        self.kind, self.name, self.fun = kind, name, fun
        self.nargs = len(args)
        for i in nondiff:
            if not -len(args) <= i < len(args):
                raise IndexError(f"{kind} {name}: nondiff_argnums {i} is out of range for {len(args)} arguments")
        self.nondiff = sorted(i % len(args) for i in nondiff)
        self.static = [args[i] for i in self.nondiff]
        self.positions = [i for i in range(len(args)) if i not in self.nondiff]
        self.diff_args = tuple(args[i] for i in self.positions)
        self.leaves, self.in_tree = tensor_leaves(self.diff_args, f"{kind} {name}", _diff_argument(self.positions))
        self.out_tree: TreeDef | None = None
        #: the outputs' avals, once recorded
        self.out_avals: tuple[Aval, ...] = ()
        #: the in-place write clock when the call was recorded (``None`` before): what the arrays
        #: its rules close over are checked against when they run later (``_user_run``)
        self.clock: int | None = None
        #: the memory (by owner, ``versions.memory_owner``) that the functions read as constants
        #: while traced, and the custom calls they made (``captured_arrays``, for ``jit``'s guard)
        self.captured: dict[int, np.ndarray] = {}
        self.nested: list[_Call] = []
        self._checked: Callable[..., list[Tensor]] | None = None

    def rebuild(self, xs: Sequence[Any]) -> list[Any]:
        """All arguments, the differentiable ones rebuilt from leaves ``xs``."""
        call: list[Any] = [None] * self.nargs
        for i, value in zip(self.nondiff, self.static, strict=True):
            call[i] = value
        for i, value in zip(self.positions, tree_unflatten(self.in_tree, xs), strict=True):
            call[i] = value
        return call

    def outputs(self, out: Any, what: str) -> list[Tensor]:
        """The leaves of an output pytree, checked against the first output's structure."""
        leaves, tree = _output_leaves(out, f"{self.kind} {self.name}: {what}")
        if self.out_tree is None:
            self.out_tree = tree
        elif tree != self.out_tree:
            raise CustomRuleError(
                f"{self.kind} {self.name}: {what} has structure {tree}, but the function returns {self.out_tree}"
            )
        return leaves

    def flat_fun(self, check: bool = False) -> Callable[..., list[Tensor]]:
        """The function on flat Tensors. ``check``: run it as the rules run (``_user_run``), so
        that an array it closes over that was written after the call was recorded raises
        (a batched replay, which runs the function again on each example after ``f`` returned)."""
        what = "the function (run again on each example of a batch)" if check else "the function"

        def fun(*xs: Tensor) -> list[Tensor]:
            # (a replay reads what the function reads now: only a trace's constants are noted)
            out = _user_run(self, what, lambda ys: self.fun(*self.rebuild(ys)), list(xs), check=check)
            return self.outputs(out, "the function's output")

        fun.__name__ = self.name
        fun.call = self  # type: ignore[attr-defined]
        return fun

    def checked_fun(self) -> Callable[..., list[Tensor]]:
        """``flat_fun(check=True)``, made once per call."""
        if self._checked is None:
            self._checked = self.flat_fun(check=True)
        return self._checked

    def record(self, op: ops.OpDef, params: dict[str, Any], outs: Sequence[Tensor]) -> Any:
        """Record ``op`` (the call) on the input leaves; return the output pytree."""
        results = [Tensor(o._array, o.dtype) for o in outs]
        self.out_avals = _avals(results)
        params.update(name=self.name, in_avals=_avals(self.leaves), out_avals=self.out_avals)
        recorder = hooks.current_recorder()
        assert recorder is not None
        recorder(op, params, self.leaves, tuple(x.dtype for x in self.leaves), results)
        self.clock = versions.CLOCK[0]
        assert self.out_tree is not None
        return tree_unflatten(self.out_tree, results)


def _diff_argument(positions: Sequence[int]) -> Callable[[int], str]:
    return lambda k: f"argument {positions[k]}"


# -- what the user's functions close over ----------------------------------------------------------


def _user_run(call: _Call, what: str, fn: Callable[[list[Any]], Any], xs: list[Any], check: bool) -> Any:
    """``fn(xs)``: one of ``call``'s user functions on flat Tensors ``xs``, watched where it must be.

    The derivative rules (a JVP rule, ``bwd``, ``fwd`` run again: ``check``) run after the call
    was recorded and read what they close over as it is then; eager ops would have read it at the
    call. So when an in-place write happened anywhere since the call was recorded (the write clock
    moved: otherwise this costs one compare), the rule runs under a recorder that sees every
    array it reads as a constant, and one whose memory was written after the recording (and
    before the rule started: the rule's own writes into its temporaries are its business) raises
    ``SavedValueModifiedError``, as a saved value does. With recording off the rule runs on marked
    copies of ``xs`` under a recorder that records nothing (``_mark``: its ops reach the
    watcher, and it may still write into its own temporaries), and its results are detached.
    Traced (``runtime.trace``: ``jit``'s lowering), every function notes what it reads as
    constants in ``call.captured``, for ``jit``'s closure guard. An op without a traced
    operand (``rt.cos(c)`` alone) reaches no recorder, but the fold open around ``fn``
    (``runtime.core.versions.Fold``) keeps what its result was computed from, and a constant
    operand counts as the memory it was computed from (``c``).
    """
    recorder = hooks.current_recorder()
    tracing = recorder is record_holding_all or getattr(recorder, "tracing", False)
    moved = check and call.clock is not None and versions.CLOCK[0] != call.clock
    if not (tracing or moved):
        return fn(xs)
    start = versions.CLOCK[0]
    seen: dict[int, np.ndarray] = {}
    fresh = recorder is None
    if fresh:
        xs = [_marked(x) for x in xs]
    # (the fold: an op without a traced operand, rt.cos(c), is seen through its result's roots)
    with versions.folding(), hooks.recorder_override(_watcher(_mark if fresh else recorder, seen, call, tracing)):
        result = fn(xs)
    if tracing:
        call.captured.update(seen)
    if moved:
        assert call.clock is not None
        _check_unwritten(call, what, seen, call.clock, start)
    return _detached(result) if fresh else result


def _marked(x: Any) -> Any:
    """``x`` with a node that records nothing (not ``requires_grad``: the rule may write into
    what it computes, as it may with recording off), so that the ops on it reach ``_mark``."""
    if not isinstance(x, Tensor):
        return x
    t = Tensor(x._array, x.dtype)
    t.weak = x.weak
    t.node = Var(x.dtype, tuple(x.shape), None, None, x.weak)
    return t


def _mark(op: ops.OpDef, params: dict[str, Any], inputs: Sequence[Any], targets: Any, outputs: Any, *_: Any) -> None:
    """The recorder of a rule run with recording off but watched: it records nothing, and marks
    the outputs as it marked the inputs (``_marked``), so the ops on them reach it too."""
    for o in outputs:
        if isinstance(o, Tensor) and o.node is None:
            o.node = Var(o.dtype, tuple(o.shape), None, None, o.weak)


def _detached(result: Any) -> Any:
    """``result`` (a pytree) with each tracked Tensor leaf replaced by an untracked one."""

    def detach(x: Any) -> Any:
        if not isinstance(x, Tensor) or x.node is None:
            return x
        t = Tensor(x._array, x.dtype)
        t.weak = x.weak
        return t

    leaves, tree = tree_flatten(result)
    return tree_unflatten(tree, [detach(x) for x in leaves])


def _watcher(inner: Any, seen: dict[int, np.ndarray], call: _Call, tracing: bool) -> Callable[..., None]:
    """A recorder that notes the memory of each constant operand (and, traced, each custom call
    made) before handing the op to ``inner``."""
    assert inner is not None

    def watch(op: ops.OpDef, params: dict[str, Any], inputs: Sequence[Any], *rest: Any) -> None:
        for x in inputs:
            if isinstance(x, Tensor) and x.node is None:
                for owner in versions.fold_roots(x._array):  # its memory, or what it was computed from
                    seen[id(owner)] = owner
        if tracing and op in (ops.custom_jvp_call, ops.custom_vjp_call):
            nested = getattr(params.get("fun"), "call", None)
            if isinstance(nested, _Call) and nested is not call and nested not in call.nested:
                call.nested.append(nested)
        inner(op, params, inputs, *rest)

    watch.closure_probe = getattr(inner, "closure_probe", False)  # type: ignore[attr-defined]
    watch.tracing = tracing  # type: ignore[attr-defined]
    return watch


def _writes_since(array: np.ndarray, clock: int) -> int | None:
    """How many in-place writes ``array``'s memory had after the write clock read ``clock``
    (``None``: more than its counter remembers)."""
    hit = versions.written_since(array, clock)
    if hit is None:
        return 0
    now, then = hit
    return now - int(then) if then.isdigit() else None


def _check_unwritten(call: _Call, what: str, seen: dict[int, np.ndarray], recorded: int, start: int) -> None:
    for owner in seen.values():
        since = _writes_since(owner, recorded)
        if since == 0:
            continue
        if since is not None and since == _writes_since(owner, start):
            continue  # every write came after the rule started: its own
        now, then = versions.written_since(owner, recorded) or (0, "0")
        raise SavedValueModifiedError(
            f"{call.kind} {call.name}: {what} reads a {owner.dtype}{list(owner.shape)} array (one it closes "
            f"over, or memory it shares) that was written in place after {call.name} was recorded (its memory is "
            f"at version {now} now, {then} when recorded), through this tensor or one sharing its memory (a view, "
            "detach(), another asarray of the same NumPy array). The rule would use the new values and the "
            "derivative would disagree with the computation that was recorded, so nothing was returned. Pass "
            "the array as an argument (for a custom_vjp, save what bwd needs as a residual), or write into a copy."
        )


def calls_in(graph: Graph) -> list[_Call]:
    """The custom calls recorded in ``graph`` (their ``_Call``)."""
    out = []
    for eqn in graph.eqns:
        if eqn.op in (ops.custom_jvp_call, ops.custom_vjp_call):
            call = getattr(eqn.params.get("fun"), "call", None)
            if isinstance(call, _Call):
                out.append(call)
    return out


def captured_arrays(calls: Sequence[_Call]) -> Iterator[tuple[_Call, np.ndarray]]:
    """The memory each of ``calls`` (and the custom calls they made) read as constants while traced."""
    stack, done = list(calls), set()
    while stack:
        call = stack.pop()
        if id(call) in done:
            continue
        done.add(id(call))
        for owner in list(call.captured.values()):
            yield call, owner
        stack.extend(call.nested)


def example_params(op: ops.OpDef, params: dict[str, Any], args: Sequence[Tensor]) -> dict[str, Any]:
    """The params of one example's call where a batching rule runs a user call per example
    (``autodiff.batching_rules.batch_user_call``).

    The function runs checked (``_Call.checked_fun``): the replay runs it after the batched
    function returned, so it reads what it closes over as it is then, where the recorded example
    read it at the call; a write in between raises ``SavedValueModifiedError`` instead of batching
    the new values. A ``custom_vjp_call``'s ``residuals`` are what ``fwd`` saved for the example
    the call was recorded on, so each example gets its own (``fwd`` run on it, checked too, as an
    eager call saves them), or none where the call is not recorded (nothing reads them)."""
    call = getattr(params.get("fun"), "call", None)
    if isinstance(call, _Call):
        params = {**params, "fun": call.checked_fun()}
    if op is not ops.custom_vjp_call or params.get("residuals") is None:
        return params
    if not _recording(args):
        return {**params, "residuals": None}
    with hooks.recorder_override(None):
        _, residuals = params["fwd"](*args)
    return {**params, "residuals": tuple(residuals)}


def _primal_run(call: _Call, fn: Callable[..., Any], what: str) -> Any:
    """``fn`` on the call's arguments with nothing recorded (the call is recorded as one
    equation), checking that it reads no tracked value other than its own arguments.

    Where ``no_grad`` would let a closure over a tracked value pass unnoticed (and its
    contribution to every derivative be lost), a probe recorder sees each op with a tracked
    operand. ``fn`` gets its arguments as new variables (so a closure over the very value
    passed as an argument is told apart from the argument); an operand that depends on a
    tracked value made outside ``fn`` (a leaf, or a transform's input) other than through the
    arguments is a closure over a value being differentiated: ``CustomClosureError``.
    """
    from autodiff.record import FRESH_INPUTS, fresh_serial

    args = []
    for x in call.leaves:
        if x.node is None:
            args.append(x)
            continue
        inner = Tensor(x._array, x.dtype)
        with enable_grad():
            record_op(ops.convert, {"new_dtype": x.dtype}, (x,), (x.dtype,), (inner,))
        args.append(inner)
    boundary = [x.node for x in args if x.node is not None]
    allowed = {id(v) for v in boundary}
    start = fresh_serial()

    def outside(v: Any) -> bool:
        # a tracked value that does not come from the arguments: a leaf made outside fn, or a
        # transform input made before fn started
        if v.const is not None:
            return False
        if v.producer is None:
            return True
        serial = FRESH_INPUTS.get(v)
        return serial is not None and serial < start

    def probe(op: ops.OpDef, params: dict[str, Any], inputs: Sequence[Tensor], targets: Any, outputs: Any) -> None:
        for x in inputs:
            var = x.node
            if var is None or id(var) in allowed:
                continue
            stack, seen = [var], set()
            while stack:
                v = stack.pop()
                if id(v) in allowed or id(v) in seen:
                    continue
                seen.add(id(v))
                if outside(v):
                    raise CustomClosureError(
                        f"{call.kind} {call.name}: {what} reads a tracked {var.dtype.name}{list(var.shape)} value "
                        f"that is not one of its arguments ({op.name} of a value it closes over, which is being "
                        "differentiated). The recorded call cannot carry that dependence, so derivatives would "
                        "silently miss it: pass the value as an argument instead (as JAX requires)."
                    )
                if v.producer is not None and FRESH_INPUTS.get(v) is None:
                    stack.extend(v.producer.inputs)
            allowed.add(id(var))

    probe.closure_probe = True  # type: ignore[attr-defined]
    with hooks.recorder_override(probe):
        return fn(*args)


def _recording(leaves: Sequence[Tensor]) -> bool:
    recorder = hooks.current_recorder()
    if recorder is None or getattr(recorder, "closure_probe", False):
        return False  # (inside ``_primal_run`` a custom call runs its function, as under no_grad)
    return any(x.node is not None for x in leaves)


def _bind(fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Keyword arguments resolved to positions (JAX's rules take positional arguments only)."""
    if not kwargs:
        return args
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.args) + tuple(bound.kwargs.values())


def _checked_tangent(call: _Call, what: str, got: Any, aval: Aval, index: int) -> Tensor:
    """A rule's tangent or cotangent as a Tensor of ``aval`` (zeros for ``None``), else a clear error."""
    dtype, shape = aval
    if got is None or isinstance(got, Zero):
        return instantiate(Zero(dtype, shape))
    t = got if isinstance(got, Tensor) else Tensor(np.asarray(got), None)
    if t.dtype is not dtype or tuple(t.shape) != tuple(shape):
        raise CustomRuleError(
            f"{call.kind} {call.name}: the rule returned {t.dtype.short}{list(t.shape)} for {what} {index}, "
            f"which is {dtype.short}{list(shape)}: a rule's tangents and cotangents have the dtype and shape "
            "of their primal"
        )
    return t


class custom_jvp:  # (JAX's name)
    """A function with a user-defined forward-mode rule (JAX's ``jax.custom_jvp``).

    ``f.defjvp(rule)`` sets ``rule(*nondiff_args, primals, tangents) ->
    (primal_out, tangent_out)``, where ``primals`` and ``tangents`` are tuples
    of the differentiable arguments (pytrees). Reverse mode transposes the
    rule's tangent map, so one rule serves ``jvp``, ``grad`` and ``vjp``.
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable[..., Any] | None = None

    def defjvp(self, jvp: Callable[..., Any]) -> Callable[..., Any]:
        """Set the JVP rule (usable as a decorator; returns ``jvp``)."""
        self.jvp = jvp
        return jvp

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = _bind(self.fun, args, kwargs)
        name = getattr(self.fun, "__name__", "custom_jvp")
        call = _Call("custom_jvp", name, self.fun, args, self.nondiff_argnums)
        if not _recording(call.leaves):
            return self.fun(*args)
        if self.jvp is None:
            raise AttributeError(f"no JVP rule defined for the custom_jvp function {name!r}: use defjvp")
        fun = call.flat_fun()
        outs = _primal_run(call, fun, "the function")
        return call.record(ops.custom_jvp_call, {"fun": fun, "jvp": self._flat_jvp(call)}, outs)

    def _flat_jvp(self, call: _Call) -> Callable[..., tuple[list[Tensor], list[Tensor]]]:
        rule = self.jvp
        assert rule is not None
        n = len(call.leaves)

        def run(xs: list[Any]) -> Any:
            p = tree_unflatten(call.in_tree, xs[:n])
            t = tree_unflatten(call.in_tree, xs[n:])
            return rule(*call.static, tuple(p), tuple(t))

        def jvp(primals: Sequence[Tensor], tangents: Sequence[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
            result = _user_run(call, "the JVP rule", run, [*primals, *tangents], check=True)
            if not (isinstance(result, tuple | list) and len(result) == 2):
                raise CustomRuleError(
                    f"custom_jvp {call.name}: the JVP rule must return a pair (primal_out, tangent_out), "
                    f"got {type(result).__name__}"
                )
            outs = call.outputs(result[0], "the JVP rule's primal output")
            assert call.out_tree is not None
            try:
                t_leaves = flatten_up_to(call.out_tree, result[1])
            except (ValueError, TypeError):
                raise CustomRuleError(
                    f"custom_jvp {call.name}: the JVP rule's tangent output has structure "
                    f"{tree_structure(result[1])}, but the primal output is {call.out_tree}"
                ) from None
            return outs, [
                _checked_tangent(call, "output", t, (o.dtype, tuple(o.shape)), i)
                for i, (t, o) in enumerate(zip(t_leaves, outs, strict=True))
            ]

        jvp.__name__ = getattr(rule, "__name__", "jvp")
        jvp.call = call  # type: ignore[attr-defined]
        return jvp


class custom_vjp:  # (JAX's name)
    """A function with a user-defined reverse-mode rule (JAX's ``jax.custom_vjp``).

    ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)`` (all arguments,
    ``residuals`` a pytree of arrays); ``bwd(*nondiff_args, residuals,
    cotangent) -> tuple`` with one cotangent pytree per differentiable
    argument (``None`` for zero), under castwise's convention (PyTorch's:
    ``ct * conj(f'(z))`` for a holomorphic ``f``). There is no forward mode.
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """Set the forward pass (output and residuals) and the backward rule."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = _bind(self.fun, args, kwargs)
        name = getattr(self.fun, "__name__", "custom_vjp")
        call = _Call("custom_vjp", name, self.fun, args, self.nondiff_argnums)
        if not _recording(call.leaves):
            return self.fun(*args)
        if self.fwd is None or self.bwd is None:
            raise AttributeError(f"no VJP rule defined for the custom_vjp function {name!r}: use defvjp")
        fun, fwd, bwd = call.flat_fun(), *self._flat_rules(call)
        outs, residuals = _primal_run(call, fwd, "fwd")
        params = {"fun": fun, "fwd": fwd, "bwd": bwd, "residuals": tuple(residuals)}
        return call.record(ops.custom_vjp_call, params, outs)

    def _flat_rules(self, call: _Call) -> tuple[Callable[..., Any], Callable[..., Any]]:
        user_fwd, user_bwd = self.fwd, self.bwd
        assert user_fwd is not None and user_bwd is not None
        res_tree: list[TreeDef] = []
        arg_trees = [tree_structure(a) for a in call.diff_args]
        in_avals = _avals(call.leaves)

        def fwd(*xs: Tensor) -> tuple[list[Tensor], list[Tensor]]:
            # (run again after the call was recorded: for a create_graph backward, per example)
            result = _user_run(call, "fwd", lambda ys: user_fwd(*call.rebuild(ys)), list(xs), check=True)
            if not (isinstance(result, tuple | list) and len(result) == 2):
                raise CustomRuleError(
                    f"custom_vjp {call.name}: fwd must return a pair (output, residuals), got {type(result).__name__}"
                )
            outs = call.outputs(result[0], "fwd's output")
            residuals, tree = tensor_leaves(result[1], f"custom_vjp {call.name}", "fwd's residuals")
            res_tree[:] = [tree]
            return outs, residuals

        def bwd(residuals: Sequence[Tensor], cotangents: Sequence[TangentLike]) -> list[Tensor | None]:
            assert call.out_tree is not None and res_tree
            cts = [
                _checked_tangent(call, "output", c, a, i)
                for i, (c, a) in enumerate(zip(cotangents, call.out_avals, strict=True))
            ]
            out_tree, n_res = call.out_tree, len(residuals)

            def run(xs: list[Any]) -> Any:
                return user_bwd(
                    *call.static, tree_unflatten(res_tree[0], xs[:n_res]), tree_unflatten(out_tree, xs[n_res:])
                )

            got = _user_run(call, "bwd", run, [*residuals, *cts], check=True)
            if not isinstance(got, tuple | list) or len(got) != len(call.positions):
                n = len(got) if isinstance(got, tuple | list) else type(got).__name__
                raise CustomRuleError(
                    f"custom_vjp {call.name}: bwd must return a tuple with one cotangent per differentiable "
                    f"argument ({len(call.positions)}), got {n}"
                )
            flat: list[Any] = []
            for k, (g, tree) in enumerate(zip(got, arg_trees, strict=True)):
                if g is None:
                    flat.extend([None] * tree.num_leaves)
                    continue
                try:
                    flat.extend(flatten_up_to(tree, g))
                except (ValueError, TypeError):
                    raise CustomRuleError(
                        f"custom_vjp {call.name}: bwd's cotangent for argument {call.positions[k]} has structure "
                        f"{tree_structure(g)}, but the argument is {tree}"
                    ) from None
            return [
                _checked_tangent(call, "argument leaf", g, a, i) if a[0].is_inexact else None
                for i, (g, a) in enumerate(zip(flat, in_avals, strict=True))
            ]

        fwd.__name__ = getattr(user_fwd, "__name__", "fwd")
        bwd.__name__ = getattr(user_bwd, "__name__", "bwd")
        fwd.call = bwd.call = call  # type: ignore[attr-defined]
        return fwd, bwd


# -- the equations' derivative rules ----------------------------------------------------------------


def custom_jvp_call_jvp(
    primals: Sequence[Tensor], tangents: Sequence[TangentLike], outputs: Sequence[Tensor], *, jvp: Any, **_: Any
) -> list[TangentLike]:
    """The user's rule, on instantiated tangents (as JAX's ``custom_jvp`` hands them over)."""
    _, t_out = jvp(list(primals), [instantiate(t) for t in tangents])
    return list(t_out)


JVP_RULES["custom_jvp_call"] = custom_jvp_call_jvp


def custom_jvp_call_vjp(
    cotangents: Sequence[TangentLike], primals: Sequence[Tensor], outputs: Sequence[Tensor], needs: Sequence[bool],
    *, jvp: Any, **_: Any,
) -> list[TangentLike]:  # fmt: skip
    """The transpose of the rule's tangent map ``t -> jvp(primals, t)[1]``, which is linear: it is
    recorded from zero tangents and pulled back (with ``create_graph``, the pull-back is recorded
    too, so the primals' part in it is differentiated again)."""
    create = is_recording()
    active = [i for i, need in enumerate(needs) if need]
    seeds_in = [instantiate(Zero(p.dtype, tuple(p.shape))) for p in primals]
    leaves = []
    for i in active:
        t = Tensor(seeds_in[i]._array, seeds_in[i].dtype)
        new_leaf(t)
        seeds_in[i] = t
        leaves.append(t)
    with enable_grad():
        _, t_out = jvp(list(primals), seeds_in)
    boundary = [t.node for t in leaves] + [p.node for p in primals if p.node is not None]
    eqns = reachable_eqns([t.node for t in t_out if t.node is not None], boundary)
    seeds: dict[int, TangentLike] = {}
    for t, ct in zip(t_out, cotangents, strict=True):
        if t.node is None or isinstance(ct, Zero):
            continue
        seeds[id(t.node)] = ct if id(t.node) not in seeds else seeds[id(t.node)] + ct
    pulled = vjp_pass(eqns, seeds, create_graph=create)
    result: list[TangentLike] = [Zero(p.dtype, tuple(p.shape)) for p in primals]
    for i, t in zip(active, leaves, strict=True):
        result[i] = pulled.get(id(t.node), result[i])
    return result


VJP_RULES["custom_jvp_call"] = custom_jvp_call_vjp


def _all_inputs(needs: Sequence[bool]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    # the rule reads every primal input (the JVP rule's coefficients; custom_vjp's fwd under create_graph)
    return tuple(range(len(needs))), ()


VJP_SAVES["custom_jvp_call"] = _all_inputs


def custom_vjp_call_jvp(primals: Sequence[Tensor], tangents: Sequence[TangentLike], outputs: Sequence[Tensor],
                        *, name: str, **_: Any) -> list[TangentLike]:  # fmt: skip
    """None: a custom_vjp function is reverse mode only (JAX's rule)."""
    raise CustomVJPForwardError(name)


JVP_RULES["custom_vjp_call"] = custom_vjp_call_jvp


def custom_vjp_call_vjp(
    cotangents: Sequence[TangentLike], primals: Sequence[Tensor], outputs: Sequence[Tensor], needs: Sequence[bool],
    *, fwd: Any, bwd: Any, residuals: Any, **_: Any,
) -> list[TangentLike]:  # fmt: skip
    """The user's ``bwd`` on the residuals ``fwd`` saved. With ``create_graph`` (or a call recorded
    without residuals) ``fwd`` runs again under the recorder, so the residuals carry their
    dependence on the primals and the cotangents can be differentiated again."""
    if residuals is None or is_recording():
        _, residuals = fwd(*primals)
    cts = bwd(list(residuals), list(cotangents))
    return [
        ct if need and ct is not None else Zero(p.dtype, tuple(p.shape))
        for ct, need, p in zip(cts, needs, primals, strict=True)
    ]


VJP_RULES["custom_vjp_call"] = custom_vjp_call_vjp
VJP_SAVES["custom_vjp_call"] = _all_inputs


def custom_vjp_call_residuals(params: dict[str, Any]) -> list[tuple[str, Tensor]]:
    """The residuals ``fwd`` saved: ``bwd`` reads them, so a backward pass checks them first, as
    it checks an equation's saved inputs (PyTorch's ``save_for_backward``)."""
    residuals = params.get("residuals")
    if residuals is None:
        return []
    return [(f"residual {i} of custom_vjp {params['name']}", r) for i, r in enumerate(residuals)]


PARAM_READS["custom_vjp_call"] = custom_vjp_call_residuals


def print_custom_call(params: dict[str, Any]) -> str:
    """``[name=softplus rule=softplus_jvp]``: the user function and its rule, by name."""
    rule = params.get("jvp") or params.get("bwd")
    return f"[name={params['name']} rule={getattr(rule, '__name__', rule)}]"


PRINT_RULES["custom_jvp_call"] = print_custom_call
PRINT_RULES["custom_vjp_call"] = print_custom_call
