"""``castwise explain``: the plan of an op under a policy, and its graph before and
after the ``promote`` and ``canonicalize`` passes.

Two forms::

    castwise explain "add f64 c128"                    # an op and operand dtypes
    castwise explain "x * 2.5 + y" --var x=i32[3] --var y=f32[3]   # a Python expression

The op form builds the graph an unpromoted recording would store (operands of
their own dtypes), then shows what ``promote`` and ``canonicalize`` make of it.
The expression form traces the expression (tracing already promotes through the
plan) and shows the plan of every promoting op in it.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

import passes
import runtime as rt
from passes.build import GraphBuilder
from runtime.core import lax as F
from runtime.core import ops, shapes
from runtime.core.dtypes import DType
from runtime.core.errors import CastwiseError
from runtime.core.executor import apply
from runtime.core.graph import Graph
from runtime.core.plan import plan, promotes, rewrite
from runtime.core.promotion import use_policy

N = 3


class ExplainInputError(CastwiseError, ValueError):
    """``castwise explain`` was given something it cannot read (an unknown op or dtype, a bad spec)."""


def _dtype(word: str) -> DType:
    try:
        return rt.dtype(word)
    except TypeError:
        from autodiff.suggest import did_you_mean

        hint = did_you_mean(word, [n for d in rt.ALL_DTYPES for n in (d.short, d.name)])
        names = ", ".join(d.short for d in rt.ALL_DTYPES)
        raise ExplainInputError(f"unknown dtype {word!r}; " + (hint or f"the dtypes: {names}")) from None


def op_names() -> list[str]:
    """The names ``castwise explain`` takes as an op: ``stack`` and the vocabulary's."""
    return ["stack", *ops.OPS]


def _op(name: str) -> ops.OpDef:
    try:
        return ops.get(name)
    except KeyError:
        from autodiff.suggest import did_you_mean

        # (the whole list, 150 names, made a 1,214-character line: it is --list-ops now)
        hint = did_you_mean(name, op_names()) or "no op has a name like it"
        raise ExplainInputError(
            f"unknown op {name!r}; {hint} (castwise explain --list-ops prints the {len(op_names())} op names)"
        ) from None


def refusal(spec: str, variables: list[str] | None, policy: str | None, err: Exception) -> str:
    """One line for a refused promotion: the plan's error, and the policy's reason for the refused pair.

    The plan's error usually carries the reason already; for three or more
    operands (joined at once) the first refused pair's reason is added.
    """
    pol = rt.get_policy_object(policy or rt.get_policy())
    text = " ".join(str(err).split())
    reason = ""
    if not variables:
        dtypes = [_dtype(w) for w in spec.split()[1:]]
        refused = [(a, b) for i, a in enumerate(dtypes) for b in dtypes[i + 1 :] if not pol.can_promote(a, b)]
        if refused:
            reason = pol.explain_failure(*refused[0])
    head = f"policy {pol.name!r} refuses {spec.split()[0]}({', '.join(spec.split()[1:])})" if not variables else (
        f"policy {pol.name!r} refuses {spec!r}")  # fmt: skip
    if reason and reason not in text:
        text += f" (the policy's reason: {reason})"
    return f"{head}: {text}"


_SCATTER_DIMS = shapes.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                               scatter_dims_to_operand_dims=(0,))  # fmt: skip


def _example(op_name: str, dtypes: list[DType]) -> tuple[str, list[tuple[int, ...]], dict[str, Any]]:
    """Example operand shapes and params for ``op_name`` (``stack`` is a concatenate
    whose operands are one rank short, as a recorded stack is before canonicalize)."""
    if op_name == "stack":
        return "concatenate", [(N,)] * len(dtypes), {"dimension": 0}
    op = ops.get(op_name)
    family = op.family
    if family == ops.CONCATENATE:
        return op_name, [(N,)] * len(dtypes), {"dimension": 0}
    if family == ops.DOT:
        return op_name, [(N,), (N,)], {"dimension_numbers": (((0,), (0,)), ((), ()))}
    if family == ops.SCATTER:
        return op_name, [(N,), (1, 1), (1,)], {"dimension_numbers": _SCATTER_DIMS}
    if family == ops.DYNAMIC_UPDATE_SLICE:
        return op_name, [(N,), (1,), *[()] * (len(dtypes) - 2)], {}
    if family == ops.CLAMP:
        return op_name, [(), (N,), ()], {}
    if family == ops.CONV:  # one spatial dimension, lax's default layout
        conv = {"window_strides": (1,), "padding": ((0, 0),), "lhs_dilation": (1,), "rhs_dilation": (1,),
                "dimension_numbers": ((0, 1, 2), (0, 1, 2), (0, 1, 2)), "feature_group_count": 1,
                "batch_group_count": 1}  # fmt: skip
        return op_name, [(1, 1, N), (1, 1, 1)], conv
    if family == ops.WINDOW:  # windows of one element: the operand's shape throughout
        window: dict[str, Any] = {"window_dimensions": (1,), "window_strides": (1,), "padding": ((0, 0),),
                                  "base_dilation": (1,), "window_dilation": (1,)}  # fmt: skip
        if len(dtypes) == 2:
            window["select_prim"] = "ge"
        return op_name, [(N,)] * len(dtypes), window
    if family == ops.FFT:  # a one-dimensional complex FFT over the whole operand
        return op_name, [(N,)] * len(dtypes), {"fft_type": "FFT", "fft_lengths": (N,)}
    return op_name, [(N,)] * len(dtypes), {}


def explain_op(spec: str, policy: str | None = None) -> str:
    """The explanation for ``"op dtype dtype ..."`` (``stack`` allowed as an op)."""
    words = spec.split()
    if len(words) < 2:
        raise ExplainInputError(f"expected 'OP DTYPE [DTYPE ...]' (e.g. 'add f64 c128'), got {spec!r}")
    name, dtypes = words[0], [_dtype(w) for w in words[1:]]
    if name != "stack":
        _op(name)
    with use_policy(policy or rt.get_policy()) as pol:
        op_name, in_shapes, params = _example(name, dtypes)
        op = ops.get(op_name)
        targets = plan(op, dtypes, None, params)
        lines = [f"policy {pol.name}", f"plan {name}({', '.join(d.short for d in dtypes)})"
                 f" -> ({', '.join(t.short for t in targets)})"]  # fmt: skip
        if rewrite(op, targets) is not None:  # the op stands for other ops: what a trace records
            examples = [rt.asarray(np.zeros(s, d.storage), d) for d, s in zip(dtypes, in_shapes, strict=True)]
            graph = rt.trace(lambda *xs: apply(op, xs, params), *examples)
            lines += ["", f"rewritten by the plan ({name} stands for other ops):", str(graph)]
            return "\n".join(lines)
        b = GraphBuilder()
        inputs = [b.input(d, s) for d, s in zip(dtypes, in_shapes, strict=True)]
        promoted_avals = [(t, s) for t, s in zip(targets, in_shapes, strict=True)]
        if name == "stack":
            out_shape: tuple[int, ...] = (len(dtypes), N)
            out_avals = [(targets[0], out_shape)]
        else:
            out_avals = list(shapes.abstract_eval(op, promoted_avals, params))
        out = b.raw(op, *inputs, out=out_avals if len(out_avals) > 1 else out_avals[0], **params)
        outs = out if isinstance(out, tuple) else (out,)
        raw = b.build(*outs)
        promoted = passes.promote(raw)
        canonical = passes.canonicalize(promoted)
        passes.verify(canonical)
        lines += ["", "recorded (before promote):", str(raw), "", "after promote:", str(promoted),
                  "", "after canonicalize:", str(canonical)]  # fmt: skip
    return "\n".join(lines)


_VAR = re.compile(r"^(\w+)=(\w+)\[([\d,\s]*)\]$")


def _parse_var(text: str) -> tuple[str, DType, tuple[int, ...]]:
    match = _VAR.match(text.strip())
    if not match:
        raise ExplainInputError(f"expected NAME=DTYPE[SHAPE] (e.g. x=f64[3]), got {text!r}")
    name, dtype, dims = match.groups()
    shape = tuple(int(d) for d in dims.split(",") if d.strip())
    return name, _dtype(dtype), shape


def explain_expression(expression: str, variables: list[str], policy: str | None = None) -> str:
    """Trace ``expression`` over ``variables`` (``NAME=DTYPE[SHAPE]``) and explain it."""
    parsed = [_parse_var(v) for v in variables]
    names = [p[0] for p in parsed]
    examples = [np.ones(s, d.storage) for _, d, s in parsed]
    namespace: dict[str, Any] = {n: getattr(F, n) for n in F.__all__}
    namespace.update(rt=rt, np=np)

    try:
        code = compile(expression, "<expression>", "eval")
    except SyntaxError as err:
        raise ExplainInputError(f"cannot parse the expression {expression!r}: {err.msg}") from None

    def fn(*args: Any) -> Any:
        try:
            return eval(code, {"__builtins__": {}}, {**namespace, **dict(zip(names, args, strict=True))})
        except NameError as err:
            raise ExplainInputError(f"{err} in {expression!r} (give it a --var, or use a castwise function)") from None

    with use_policy(policy or rt.get_policy()) as pol:
        examples_t = [rt.asarray(e, d) for e, (_, d, _) in zip(examples, parsed, strict=True)]
        graph: Graph = rt.trace(fn, *examples_t)
        lines = [f"policy {pol.name}"]
        for eqn in graph.eqns:
            if promotes(eqn.op):
                sources = [_source_dtype(v) for v in eqn.inputs]
                targets = [v.dtype for v in eqn.inputs]
                lines.append(f"plan {eqn.op.name}({', '.join(d.short for d in sources)})"
                             f" -> ({', '.join(t.short for t in targets)})")  # fmt: skip
        canonical = passes.canonicalize(passes.promote(graph))
        lines += ["", "recorded:", str(graph), "", "after promote and canonicalize:", str(canonical)]
    return "\n".join(lines)


def _source_dtype(var: Any) -> DType:
    # an operand converted for this op shows the dtype it had before the convert
    producer = var.producer
    if producer is not None and producer.op is ops.convert:
        return producer.inputs[0].dtype  # type: ignore[no-any-return]
    return var.dtype  # type: ignore[no-any-return]


def explain(spec: str, variables: list[str] | None = None, policy: str | None = None) -> str:
    """Dispatch: an expression when variables are given, else the op form."""
    if variables:
        return explain_expression(spec, variables, policy)
    return explain_op(spec, policy)
