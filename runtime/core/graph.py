"""The semantic graph: values, equations, a printer, an interpreter, and tracing.

A graph is a list of equations in topological order over SSA values (``Var``);
each value has a dtype and a static shape. Graphs are built in two ways, both
through ``record_op``, which writes every implicit promotion down as an explicit
``convert`` equation computed by the same ``plan`` eager execution used:

* ``trace(f, *example_args)`` runs ``f`` on traced inputs;
* ``autodiff`` records eager ops that have a tracked input (most of them lazily:
  ``runtime.core.tape`` writes the same equations when ``Tensor.node`` is read).

While recording, values are linked from consumer to producer (``Var.producer``),
so a recording lives exactly as long as something references its outputs.
``collect`` turns linked values into a ``Graph``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.core import hooks, kernels, ops, shapes
from runtime.core import tensor as tensor_module
from runtime.core import weak as weak_rules
from runtime.core.capture import Captured as Captured
from runtime.core.capture import TracedConstantError as TracedConstantError
from runtime.core.capture import check_capture
from runtime.core.dtypes import DType
from runtime.core.errors import CastwiseError, OpTypeError
from runtime.core.executor import apply, as_tensor, asarray
from runtime.core.inplace import is_referenced as is_referenced
from runtime.core.ops import OpDef
from runtime.core.plan import promotes
from runtime.core.shape_plan import broadcast_params
from runtime.core.tensor import Tensor, attach_methods
from runtime.core.versions import CLOCK as _CLOCK
from runtime.core.versions import WATCHING as _WATCHING
from runtime.core.versions import folding, note_traced

if TYPE_CHECKING:
    _TensorBase = Tensor
else:
    _TensorBase = object


#: which input and output values a recording holds on to, as positions
#: ``(inputs, outputs)``; ``None``: all of them (see ``record_op``).
Keep = tuple[Sequence[int], Sequence[int]] | None


class GraphError(CastwiseError, ValueError):
    """A graph is malformed (raised by ``passes.verify`` and the interpreter)."""


class Var:
    """One SSA value: dtype, static shape, weak flag, and where it comes from.

    ``producer`` is the equation that defines it (``None`` for graph inputs and
    constants); ``const`` holds a constant's array (the same array the eager
    tensor holds: never a copy). ``weak`` is JAX's weak type (``runtime.core.weak``),
    printed as JAX prints an aval: ``~f64[]``.
    """

    __slots__ = ("__weakref__", "const", "dtype", "owner", "producer", "shape", "value", "weak")

    def __init__(
        self,
        dtype: DType,
        shape: tuple[int, ...],
        producer: Eqn | None = None,
        const: np.ndarray | None = None,
        weak: bool = False,
    ) -> None:
        self.dtype = dtype
        self.shape = shape
        self.weak = weak
        self.producer = producer
        self.const = const
        #: the eager value, kept by recordings that will need it for derivatives
        self.value: np.ndarray | None = const
        #: for a tracked leaf: a weak reference to its Tensor (where ``.grad`` goes)
        self.owner: weakref.ref[Tensor] | None = None

    @property
    def is_leaf(self) -> bool:
        return self.producer is None

    @property
    def aval(self) -> tuple[DType, tuple[int, ...]]:
        return (self.dtype, self.shape)

    def type_str(self) -> str:
        return f"{'~' if self.weak else ''}{self.dtype.short}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        kind = "const" if self.const is not None else ("input" if self.producer is None else "value")
        return f"Var({kind} {self.type_str()})"


class Eqn:
    """``outputs = op[params](*inputs)``.

    An equation references its outputs weakly (they reference it through
    ``Var.producer``): a recording is a tree of strong references from outputs
    back to inputs, with no cycle, so reference counting frees it the moment
    nothing uses it. A ``Graph`` pins every output while it exists; an output
    nobody holds is re-created on access.
    """

    __slots__ = ("_dtype0", "_outs", "_shape0", "clock", "freed", "inputs", "keep", "op", "params")
    #: ``_outs`` is a list of (weakref, dtype, shape), or, for the recorder's compact
    #: single-output form, one weakref with the aval in ``_dtype0`` / ``_shape0``
    _outs: Any
    _dtype0: DType
    _shape0: tuple[int, ...]
    #: False; True once a backward pass released the saved values; or, after a backward
    #: pass failed partway, the text saying why (what a retry reports)
    freed: bool | str

    def __init__(self, op: OpDef, inputs: Sequence[Var], params: dict[str, Any], outputs: Sequence[Var]) -> None:
        self.op = op
        self.inputs = tuple(inputs)
        self.params = params
        self._outs = [(weakref.ref(v), v.dtype, v.shape) for v in outputs]
        #: set when a backward pass released this equation's saved values
        self.freed = False
        #: the (input, output) positions whose values the recording held (None: all)
        self.keep: Keep = None
        #: the in-place write clock when recorded (``runtime.core.versions``): a saved value whose
        #: memory was written later has changed since
        self.clock: int = _CLOCK[0]

    def _weak_out(self, i: int) -> bool:
        """The weak flag of a re-created output: the op's weak rule over the inputs' flags
        (what eager execution and the recorder computed when the output was made)."""
        if not any(v.weak for v in self.inputs) and "weak_type" not in self.params:
            return False
        return weak_rules.output_weak(self.op, [v.weak for v in self.inputs], self.params)[i]

    @property
    def outputs(self) -> tuple[Var, ...]:
        outs: Any = self._outs
        if type(outs) is weakref.ReferenceType:  # one output, in the recorder's compact form
            var = outs()
            if var is None:
                var = Var(self._dtype0, self._shape0, self, None, self._weak_out(0))
                self._outs = weakref.ref(var)
            return (var,)
        out = []
        for i, (ref, dtype, shape) in enumerate(self._outs):
            var = ref()
            if var is None:
                var = Var(dtype, shape, self, None, self._weak_out(i))
                self._outs[i] = (weakref.ref(var), dtype, shape)
            out.append(var)
        return tuple(out)

    @outputs.setter
    def outputs(self, values: Sequence[Var]) -> None:
        self._outs = [(weakref.ref(v), v.dtype, v.shape) for v in values]

    def __repr__(self) -> str:
        return f"Eqn({self.op.name})"


@dataclass
class Graph:
    """A closed program: inputs, constants, equations in topological order, outputs."""

    inputs: list[Var]
    consts: list[Var]
    eqns: list[Eqn]
    outputs: list[Var]
    #: free-form metadata (e.g. the policy a graph was traced under)
    meta: dict[str, Any] = field(default_factory=dict)
    #: strong references to every equation output while the graph exists
    _pinned: list[Var] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._pinned = [v for e in self.eqns for v in e.outputs]

    def __repr__(self) -> str:
        return pretty(self)

    def __str__(self) -> str:
        return pretty(self)

    def replace(self, **changes: Any) -> Graph:
        """A copy with some fields replaced (passes build new graphs this way)."""
        fields: dict[str, Any] = {"inputs": self.inputs, "consts": self.consts, "eqns": self.eqns,
                                  "outputs": self.outputs,
                  "meta": dict(self.meta)}  # fmt: skip
        fields.update(changes)
        return Graph(**fields)

    def __call__(self, *args: Any) -> list[Tensor]:
        return evaluate(self, *args)


# -- building --------------------------------------------------------------------------------


def emit(op: OpDef, inputs: Sequence[Var], params: dict[str, Any]) -> Eqn:
    """Append-free equation construction: infer output avals, link outputs to the eqn."""
    out_avals = shapes.abstract_eval(op, [v.aval for v in inputs], params)
    eqn = Eqn(op, inputs, params, ())
    weak = weak_rules.output_weak(op, [v.weak for v in inputs], params)
    # The caller takes the outputs from ``eqn.outputs`` (weakly held until then,
    # so an output nobody keeps costs nothing).
    eqn.outputs = tuple(Var(d, s, eqn, None, w) for (d, s), w in zip(out_avals, weak, strict=True))
    return eqn


def const_var(tensor: Tensor) -> Var:
    """The constant leaf for an untracked operand: it references the tensor's array.

    A tensor keeps its constant leaf (``Tensor._const``) and every recording
    that uses the tensor as a constant shares it, so recording an op with a
    reused constant allocates nothing for it. The shared leaf also tells an
    in-place write whether a live recording still depends on the array
    (``is_referenced``).
    """
    var: Var | None = tensor._const
    array = tensor._array
    if var is None or var.const is not array:
        var = Var(tensor.dtype, array.shape, None, array, tensor.weak)
        tensor._const = var
    return var


_HOLDS_NOTHING: Keep = ((), ())
#: the params of a recorded convert, one shared dict per target dtype (and weak flag)
_CONVERT_PARAMS: dict[Any, dict[str, Any]] = {}


def _convert_eqn(var: Var, target: DType, weak: bool = False) -> Var:
    """``convert(var, target)`` as a new equation (its output aval is known: no shape rule).

    ``weak`` marks a promoted operand whose join is weakly typed: the equation says
    so with ``weak_type=True``, as jax.numpy's ``convert_element_type`` does."""
    key: Any = (target, True) if weak else target
    params = _CONVERT_PARAMS.get(key)
    if params is None:
        params = _CONVERT_PARAMS[key] = {"new_dtype": target, "weak_type": True} if weak else {"new_dtype": target}
    eqn = Eqn.__new__(Eqn)
    eqn.op = ops.convert
    eqn.inputs = (var,)
    eqn.params = params
    eqn.freed = False
    eqn.keep = _HOLDS_NOTHING  # the converted value is never materialised (eager casts in the consumer's loop)
    eqn.clock = _CLOCK[0]
    out = Var(target, var.shape, eqn, None, weak)
    eqn._outs = weakref.ref(out)  # the compact single-output form
    eqn._dtype0 = target
    eqn._shape0 = var.shape
    return out


def _broadcast_eqn(var: Var, shape: tuple[int, ...]) -> Var:
    """``broadcast_in_dim(var)`` to ``shape`` with NumPy's axis alignment, as a new equation.

    Like a plan ``convert``, the broadcast value is never materialised by eager
    execution (it broadcasts a view in the consumer); derivative rules that read
    it recompute it from its producer."""
    eqn = Eqn.__new__(Eqn)
    eqn.op = ops.broadcast_in_dim
    eqn.inputs = (var,)
    eqn.params = broadcast_params(var.shape, shape)
    eqn.freed = False
    eqn.keep = _HOLDS_NOTHING
    eqn.clock = _CLOCK[0]
    out = Var(var.dtype, tuple(shape), eqn, None, var.weak)
    eqn._outs = weakref.ref(out)
    eqn._dtype0 = var.dtype
    eqn._shape0 = out.shape
    return out


def _planned_input(var: Var, target: DType, shape: tuple[int, ...], weak: bool) -> Var:
    """``var`` converted to its planned dtype, then broadcast to its planned shape
    (JAX's order: promote the dtype, then the shape)."""
    if var.dtype is not target:
        var = _convert_eqn(var, target, weak)
    if var.shape != shape:
        var = _broadcast_eqn(var, shape)
    return var


def record_op(
    op: OpDef,
    params: dict[str, Any],
    inputs: Sequence[Tensor],
    targets: Sequence[DType],
    outputs: Sequence[Tensor],
    keep: Keep = None,
    target_shapes: Sequence[tuple[int, ...]] | None = None,
) -> Eqn:
    """Record one eagerly executed op: promoted inputs, the equation, output nodes.

    ``keep`` names the inputs and outputs whose eager values the recording holds
    (what a derivative rule will read); ``None`` holds all of them. A value that
    is not held is recomputed from its producer if anyone asks for it. Each
    output becomes tracked when its dtype is inexact. The output avals are the
    eager results' (the shape rules already checked them when the op ran).
    ``target_shapes`` is the shape plan (``runtime.core.shape_plan``) when eager execution
    broadcast an operand: each such operand gets a ``broadcast_in_dim`` equation
    after its ``convert``. A converted promoted operand carries the result's
    weak flag (``runtime.core.weak``). This is the hot path of every tracked op, so
    it is written flat.
    """
    keep_in = None if keep is None else keep[0]
    in_vars: Any
    if target_shapes is not None:
        in_vars = _planned_inputs(op, inputs, targets, outputs, keep_in, target_shapes)
    elif len(inputs) == 2:  # binary ops, the bulk of recordings: the loop below, unrolled
        a, b = inputs
        var_a, var_b = a.node, b.node
        if var_a is None:
            var_a = a._const
            if var_a is None or var_a.const is not a._array:
                var_a = const_var(a)
        elif var_a.value is None and (keep_in is None or 0 in keep_in):
            var_a.value = a._array
        if var_b is None:
            var_b = b._const
            if var_b is None or var_b.const is not b._array:
                var_b = const_var(b)
        elif var_b.value is None and (keep_in is None or 1 in keep_in):
            var_b.value = b._array
        target_a, target_b = targets
        in_vars = (
            var_a if var_a.dtype is target_a else _convert_eqn(var_a, target_a, outputs[0].weak),
            var_b if var_b.dtype is target_b else _convert_eqn(var_b, target_b, outputs[0].weak),
        )
    else:
        in_vars = []
        for i, x in enumerate(inputs):
            var = x.node
            if var is None:
                var = const_var(x)
            elif var.value is None and (keep_in is None or i in keep_in):
                var.value = x._array  # the operand as it came (before any convert)
            target = targets[i]
            in_vars.append(var if var.dtype is target else _convert_eqn(var, target, _converted_weak(op, var, outputs)))
        in_vars = tuple(in_vars)
    eqn = Eqn.__new__(Eqn)
    eqn.op = op
    eqn.inputs = in_vars
    eqn.params = params
    eqn.freed = False
    eqn.keep = keep
    eqn.clock = _CLOCK[0]  # what the saved values' versions are checked against
    keep_out = None if keep is None else keep[1]
    if len(outputs) == 1:  # the common case, without a loop
        tensor = outputs[0]
        dtype = tensor.dtype
        array = tensor._array
        var = Var(dtype, array.shape, eqn)
        if tensor.weak:
            var.weak = True
        if keep_out is None or keep_out:
            var.value = array
        tensor.node = var
        tensor._requires_grad = dtype.is_inexact
        # the compact single-output form (``Eqn.outputs`` reads it): no list, no tuple
        eqn._outs = weakref.ref(var)
        eqn._dtype0 = dtype
        eqn._shape0 = var.shape
        return eqn
    outs = []
    for i in range(len(outputs)):
        tensor = outputs[i]
        dtype = tensor.dtype
        array = tensor._array
        var = Var(dtype, array.shape, eqn, None, tensor.weak)
        if keep_out is None or i in keep_out:
            var.value = array
        tensor.node = var
        tensor._requires_grad = dtype.is_inexact
        outs.append((weakref.ref(var), dtype, var.shape))
    eqn._outs = outs
    return eqn


def _converted_weak(op: OpDef, var: Var, outputs: Sequence[Tensor]) -> bool:
    """The weak flag a plan ``convert`` of ``var`` carries: a promoted operand takes the
    join's flag, which is the (first) output's; any other operand keeps its own."""
    return _converted_weak_flag(op, var.weak, bool(outputs) and outputs[0].weak)


def _converted_weak_flag(op: OpDef, var_weak: bool, out_weak: bool) -> bool:
    """``_converted_weak`` from the flags alone (``runtime.core.tape`` builds converts later)."""
    if not (out_weak or var_weak):
        return False
    return out_weak if promotes(op) else var_weak


def _planned_inputs(
    op: OpDef,
    inputs: Sequence[Tensor],
    targets: Sequence[DType],
    outputs: Sequence[Tensor],
    keep_in: Sequence[int] | None,
    shapes: Sequence[tuple[int, ...]],
) -> tuple[Var, ...]:
    """The input values of a broadcasting op: each operand as it came, converted to its
    planned dtype and broadcast to its planned shape."""
    in_vars = []
    for i, x in enumerate(inputs):
        var = x.node
        if var is None:
            var = const_var(x)
        elif var.value is None and (keep_in is None or i in keep_in):
            var.value = x._array
        in_vars.append(_planned_input(var, targets[i], tuple(shapes[i]), _converted_weak(op, var, outputs)))
    return tuple(in_vars)


def primal_value(var: Var) -> np.ndarray:
    """The eager value of ``var``, computing it from its producer if it was never
    materialised (a ``convert`` that eager execution fused into its consumer)."""
    if var.value is not None:
        return var.value
    pending = [var]
    while pending:  # iterative: a chain of unmaterialised values is walked, not recursed
        top = pending[-1]
        eqn = top.producer
        if eqn is None:
            raise GraphError(f"no value recorded for input {top.type_str()}")
        if eqn.freed:
            raise RuntimeError(
                eqn.freed
                if isinstance(eqn.freed, str)
                else "trying to differentiate through a graph a second time, but its saved values were "
                "released; pass retain_graph=True to the first backward()"
            )
        missing = [v for v in eqn.inputs if v.value is None]
        if missing:
            pending.extend(missing)
            continue
        values = [v.value for v in eqn.inputs]
        assert all(v is not None for v in values)
        outs, _ = kernels.run_kernel(eqn.op, [v.dtype for v in eqn.inputs], values, eqn.params)  # type: ignore[arg-type]
        for out_var, out in zip(eqn.outputs, outs, strict=True):
            out_var.value = out
        pending.pop()
    assert var.value is not None
    return var.value


def collect(outputs: Sequence[Var], inputs: Sequence[Var] | None = None) -> Graph:
    """The graph that computes ``outputs`` from linked values (iterative DFS).

    ``inputs`` fixes the order of the graph's inputs; by default they are the
    non-constant leaves in discovery order.
    """
    order: list[Eqn] = []
    seen: set[int] = set()
    leaves: list[Var] = []
    seen_leaves: set[int] = set()
    for root in outputs:
        stack: list[tuple[Var, bool]] = [(root, False)]
        while stack:
            var, expanded = stack.pop()
            eqn = var.producer
            if eqn is None:
                if id(var) not in seen_leaves:
                    seen_leaves.add(id(var))
                    leaves.append(var)
                continue
            if id(eqn) in seen:
                continue
            if expanded:
                seen.add(id(eqn))
                order.append(eqn)
                continue
            stack.append((var, True))
            for v in reversed(eqn.inputs):
                if v.producer is None or id(v.producer) not in seen:
                    stack.append((v, False))
    consts = [v for v in leaves if v.const is not None]
    found_inputs = [v for v in leaves if v.const is None]
    if inputs is None:
        inputs = found_inputs
    else:
        known = {id(v) for v in inputs}
        extra = [v for v in found_inputs if id(v) not in known]
        if extra:
            raise GraphError(f"the outputs depend on {len(extra)} value(s) that are not inputs of the graph")
    return Graph(list(inputs), consts, order, list(outputs))


# -- printing ---------------------------------------------------------------------------------


def _format_param(value: Any) -> str:
    if isinstance(value, DType):
        return value.short
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_format_param(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, float | complex | bool | int | str):
        return repr(value) if isinstance(value, str) else str(value)
    if hasattr(value, "_asdict"):
        fields = ", ".join(f"{k}={_format_param(v)}" for k, v in value._asdict().items())
        return f"{type(value).__name__}({fields})"
    if hasattr(value, "__dataclass_fields__"):
        return type(value).__name__ + "(" + ", ".join(
            f"{k}={_format_param(getattr(value, k))}" for k in value.__dataclass_fields__) + ")"  # fmt: skip
    return str(value)


def _format_params(eqn: Eqn) -> str:
    rule = PRINT_RULES.get(eqn.op.name)
    if rule is not None:
        return rule(eqn.params)
    items = [f"{k}={_format_param(v)}" for k, v in eqn.params.items() if v is not None]
    return "[" + " ".join(items) + "]" if items else ""


def print_convert(params: dict[str, Any]) -> str:
    weak = " weak_type=True" if params.get("weak_type") else ""
    return f"[to={params['new_dtype'].short}{weak}]"


#: Per-op printing rules (op name -> params formatter).
PRINT_RULES: dict[str, Callable[[dict[str, Any]], str]] = {}
PRINT_RULES["convert"] = print_convert


def _names() -> Iterable[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    n = 0
    while True:
        name, k = "", n
        while True:
            name = letters[k % 26] + name
            k = k // 26 - 1
            if k < 0:
                break
        yield name
        n += 1


def pretty(graph: Graph) -> str:
    """jaxpr-like text with stable names: constants, then inputs, then values in order."""
    names: dict[int, str] = {}
    gen = iter(_names())

    def name(v: Var) -> str:
        if id(v) not in names:
            names[id(v)] = next(gen)
        return names[id(v)]

    def decl(v: Var) -> str:
        return f"{name(v)}:{v.type_str()}"

    consts = " ".join(decl(v) for v in graph.consts)
    inputs = " ".join(decl(v) for v in graph.inputs)
    head = f"{{ lambda {consts} ; {inputs} . let" if graph.consts else f"{{ lambda {inputs} . let"
    lines = [head.replace("lambda  .", "lambda .")]
    for eqn in graph.eqns:
        outs = " ".join(decl(v) for v in eqn.outputs)
        args = " ".join(name(v) for v in eqn.inputs)
        lines.append(f"    {outs} = {eqn.op.name}{_format_params(eqn)}{' ' + args if args else ''}")
    lines.append(f"  in ({', '.join(name(v) for v in graph.outputs)}) }}")
    return "\n".join(lines)


# -- interpreting --------------------------------------------------------------------------------


def evaluate(graph: Graph, *args: Any) -> list[Tensor]:
    """Run ``graph`` on ``args`` with the same kernels eager execution uses.

    Arguments must match the input dtypes and shapes exactly: a graph is a
    program over fixed types, nothing is promoted here. When an argument is
    tracked, each equation runs through the eager executor instead, so the
    replay is recorded and can be differentiated (derivative programs included).
    ``graph`` that is no ``Graph`` raises ``OpTypeError``.
    """
    if not isinstance(graph, Graph):
        from runtime.core.promotion import get_policy

        raise OpTypeError(
            f"evaluate: graph must be a Graph (what rt.trace returns), got {type(graph).__name__} "
            f"{_short(graph)} [policy {get_policy()!r}]"
        )
    captured = graph.meta.get("captured")
    if captured is not None and captured.checked != _CLOCK[0]:
        captured.check("runtime.evaluate")  # an in-place write happened since the trace: was it here?
    if any(isinstance(a, Tensor) and a.node is not None for a in args):
        return _evaluate_recorded(graph, args)
    if len(args) != len(graph.inputs):
        raise GraphError(f"graph takes {len(graph.inputs)} inputs, got {len(args)}")
    env: dict[int, np.ndarray] = {}
    for var, arg in zip(graph.inputs, args, strict=True):
        array = arg._array if isinstance(arg, Tensor) else np.asarray(arg)
        arg_dtype = arg.dtype if isinstance(arg, Tensor) else None
        if (
            array.shape != var.shape
            or (arg_dtype is not None and arg_dtype is not var.dtype)
            or (arg_dtype is None and array.dtype != var.dtype.storage)
        ):
            raise GraphError(
                f"input {var.type_str()} got {getattr(arg_dtype, 'short', array.dtype)}{list(array.shape)}"
            )
        env[id(var)] = array
    for var in graph.consts:
        assert var.const is not None
        env[id(var)] = var.const
    for eqn in graph.eqns:
        try:
            arrays = [env[id(v)] for v in eqn.inputs]
        except KeyError:
            raise GraphError(f"{eqn.op.name}: an input is used before it is defined") from None
        outs, _ = kernels.run_kernel(eqn.op, [v.dtype for v in eqn.inputs], arrays, eqn.params)
        for var, out in zip(eqn.outputs, outs, strict=True):
            env[id(var)] = out
    return [_tensor_of(env[id(v)], v) for v in graph.outputs]


def _tensor_of(array: np.ndarray, var: Var) -> Tensor:

    out = Tensor(array, var.dtype)
    out.weak = var.weak
    return out


def _evaluate_recorded(graph: Graph, args: Sequence[Any]) -> list[Tensor]:

    if len(args) != len(graph.inputs):
        raise GraphError(f"graph takes {len(graph.inputs)} inputs, got {len(args)}")
    env: dict[int, Tensor] = {}
    for var, arg in zip(graph.inputs, args, strict=True):
        t = arg if isinstance(arg, Tensor) else asarray(arg, var.dtype)
        if t.dtype is not var.dtype or t.shape != var.shape:
            raise GraphError(f"input {var.type_str()} got {t.dtype.short}{list(t.shape)}")
        env[id(var)] = t
    for var in graph.consts:
        assert var.const is not None
        env[id(var)] = _tensor_of(var.const, var)
    for eqn in graph.eqns:
        result = apply(eqn.op, [env[id(v)] for v in eqn.inputs], eqn.params)
        outs = result if isinstance(result, tuple) else (result,)
        for var, out in zip(eqn.outputs, outs, strict=True):
            env[id(var)] = out
    return [env[id(v)] for v in graph.outputs]


# -- tracing -------------------------------------------------------------------------------------


def record_holding_all(
    op: OpDef,
    params: dict[str, Any],
    inputs: Sequence[Tensor],
    targets: tuple[DType, ...],
    outputs: Sequence[Tensor],
    target_shapes: Sequence[tuple[int, ...]] | None = None,
) -> None:
    """A recorder (``runtime.core.hooks``) whose recordings hold every value: ``trace``, and
    ``autodiff.vmap``'s recording of one example (its replay and a tracer read them all).
    The trace's fold (``runtime.core.versions.Fold``) notes the memory of what it records."""
    record_op(op, params, inputs, targets, outputs, None, target_shapes)
    if _WATCHING[0]:
        for t in outputs:
            note_traced(t._array)


class ConcretizationError(CastwiseError, TypeError):
    """A function needs a value that is only traced: known when this trace runs, not when the
    traced program replays (``rt.trace`` + ``evaluate``, ``autodiff.jit``, ``autodiff.vmap``).

    castwise's ``jax.errors.ConcretizationTypeError``: raised where the value would decide a
    shape, a Python branch or a bounds check that the graph cannot hold, instead of baking in
    this call's value. The message names the function and the parameter.
    """


class ConcretizationIndexError(ConcretizationError, IndexError):
    """A ``ConcretizationError`` for an index (a traced mask, or traced integer indices whose
    bounds the active policy checks eagerly): also an ``IndexError``, as the eager check's is."""


def tracing() -> bool:
    """Whether a trace is open in this thread (``trace``, ``autodiff.jit``'s trace, ``autodiff.vmap``'s
    recording of an example), however many recorders (``grad``'s, ``no_grad``) were pushed since."""
    return bool(hooks._OVERRIDES[0]) and record_holding_all in hooks._LOCAL.stack


def is_traced(t: Tensor) -> bool:
    """Whether ``t`` is on a graph while a trace is open (``trace``, ``jit``, ``vmap``): its values are
    this call's, so a function must not let them decide a shape, a branch or a bounds check (the
    graph would hold them). Also inside a ``grad`` (or ``no_grad``) nested in the trace, whose own
    recorder is the current one: their values derive from the trace's inputs too."""
    return t.node is not None and tracing()


def _refuse_concrete(t: Tensor, fn: str) -> None:
    """``fn`` (``bool``, ``float``, ``Tensor.item`` ...) of a traced ``t`` raises, as ``jax.jit``
    raises ``ConcretizationTypeError`` for a tracer: the trace would hand back this call's value,
    and a replay (the compiled program, every example of a ``vmap``, ``evaluate``) would keep it,
    so a Python branch or number computed from it would silently be the trace's."""
    if not tracing():
        return
    from runtime.core.promotion import get_policy

    raise ConcretizationError(
        f"{fn}: the value of a traced {t.dtype.name}{list(t.shape)} Tensor is not known when the program "
        "replays (inside autodiff.jit, autodiff.vmap or rt.trace it stands for every call's, or every "
        "example's, value), so it cannot become a Python or NumPy value here. Keep it a Tensor (rt.where "
        "instead of an if, array ops instead of .item()), or pass the value in as a Python number. "
        f"[policy {get_policy()!r}]"
    )


tensor_module.CONCRETE[0] = _refuse_concrete


def new_leaf(tensor: Tensor) -> Var:
    """Make ``tensor`` a graph input (a leaf ``Var`` holding its value)."""
    var = Var(tensor.dtype, tensor.shape, None, None, tensor.weak)
    var.value = tensor._array
    var.owner = weakref.ref(tensor)
    tensor.node = var
    tensor._requires_grad = tensor.dtype.is_inexact
    return var


class TensorLeaves(_TensorBase):
    """``Tensor.requires_grad_``, attached here (``attach_methods``): a tracked leaf is a graph input."""

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Mark this tensor as a tracked leaf (in place; returns ``self``)."""
        if requires_grad and not self.dtype.is_inexact:
            raise TypeError(f"only floating and complex tensors can require gradients; this one is {self.dtype.name}")
        if self.node is not None and not self.node.is_leaf:
            raise RuntimeError("requires_grad_() on a recorded result: use detach() to start a new leaf")
        if requires_grad:
            new_leaf(self)
        else:
            self._requires_grad = False
            self.node = None
        return self


attach_methods(TensorLeaves)


def trace(f: Callable[..., Any], *example_args: Any) -> Graph:
    """Build the graph of ``f`` by running it on traced copies of ``example_args``.

    Every promoting op gets explicit ``convert`` equations from the same plan
    eager execution uses. ``f`` returns a Tensor or a tuple/list of Tensors.

    The graph replays what ``f`` did only if no memory it captured changed under it:
    an in-place write into an argument while ``f`` runs, into a constant after an op
    read it, or into a recorded value after it was computed raises, and so does a
    constant that holds the arguments' values (``runtime.core.capture``). ``evaluate``
    raises if a constant, or memory a constant was computed from, is written later.
    ``f`` that is not callable raises ``OpTypeError``.
    """
    if not callable(f):
        from runtime.core.promotion import get_policy

        raise OpTypeError(
            f"trace: f must be a callable (the function to trace), got {type(f).__name__} {_short(f)} "
            f"[policy {get_policy()!r}]"
        )
    return trace_function(f, example_args, f"runtime.trace({_name(f)})")


def _short(x: Any, limit: int = 60) -> str:
    text = repr(x)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _name(f: Any) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


def trace_function(
    f: Callable[..., Any], example_args: Sequence[Any], where: str, describe: Callable[[int], str] | None = None
) -> Graph:
    """``trace``, naming ``where`` (the transform and function) and each argument
    (``describe(i)``, default ``argument i``) in its errors."""
    from runtime.core.promotion import get_policy

    traced = []
    given = []
    for arg in example_args:
        t = as_tensor(arg)
        given.append(t)
        weak = t.weak
        t = Tensor(t._array, t.dtype)
        t.weak = weak  # the abstract value is (dtype, shape, weak): a weak example traces weak
        new_leaf(t)
        traced.append(t)
    start = _CLOCK[0]
    with folding() as fold:
        for t in traced:
            fold.note_traced(t._array)
        with hooks.recorder_override(record_holding_all):
            result = f(*traced)
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    out_vars = []
    for r in results:
        if not isinstance(r, Tensor):
            raise OpTypeError(f"trace: f must return Tensors, got {type(r).__name__} [policy {get_policy()!r}]")
        out_vars.append(r.node if r.node is not None else const_var(r))
    graph = collect(out_vars, [t.node for t in traced])
    graph.meta["policy"] = get_policy()
    name = describe or (lambda i: f"argument {i}")
    arguments = [(name(i), v) for i, v in enumerate(graph.inputs)]
    graph.meta["captured"] = check_capture(where, graph.eqns, arguments, graph.outputs, start, fold, given=given)
    return graph
