"""``verify``: the checks every pass's result must pass."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from passes._util import arity_ok, eqn_text, outputs_text
from passes.build import GraphBuilder
from passes.promote import KERNEL_ERRORS
from runtime.core.graph import Eqn, Graph, GraphError
from runtime.core.ops import OpDef
from runtime.core.plan import PLAN_RULES, plan_all, plan_scatter, plan_select, plan_update_slice
from runtime.core.shapes import abstract_eval
from runtime.core.weak import output_weak

#: Which operand positions each plan rule promotes to one common dtype, keyed
#: by the rule objects of ``runtime.core.plan.PLAN_RULES`` so this follows the
#: plan's family structure instead of restating it per family. A rule the plan
#: gains without an entry here makes ``verify`` fail loudly (see
#: ``promoted_positions``), never silently skip a check.
_POSITIONS: dict[Callable[..., object], Callable[[int], Sequence[int]]] = {
    plan_all: lambda n: range(n),
    plan_select: lambda n: (1, 2),  # the predicate keeps its dtype
    plan_scatter: lambda n: (0, 2),  # the indices keep theirs
    plan_update_slice: lambda n: (0, 1),  # so do the start indices
}


def promoted_positions(op: OpDef, count: int) -> tuple[int, ...]:
    """The operand positions of ``op`` that the plan promotes to one dtype."""
    rule = PLAN_RULES.get(op.family)
    if rule is None:
        return ()
    try:
        positions = _POSITIONS[rule]
    except KeyError:
        raise NotImplementedError(
            f"verify: plan rule {getattr(rule, '__name__', rule)!r} of family {op.family!r} "
            "has no operand positions declared in passes.verify"
        ) from None
    return tuple(i for i in positions(count) if i < count)


def verify(graph: Graph) -> None:
    """Raise ``GraphError`` unless ``graph`` is well formed; return ``None`` otherwise.

    The raw ``add(x:f64, y:c128)`` fails — its promoted operands disagree —
    with the equation printed as ``pretty`` prints it::

        { lambda a:f64[3] b:c128[3] . let
            c:c128[3] = add a b
          in (c) }
        ->
        GraphError: verify: equation 0: promoted operands of add disagree in dtype (x:f64, y:c128)
            c:c128[3] = add a b

    Checks, in order, for every equation:

    * every input is defined before use (a graph input, a constant, or an
      output of an earlier equation) and no value is defined twice;
    * the operand count fits the op's declaration;
    * the operands a promoting family promotes (per the plan's family
      structure: both for binary, on_true/on_false for select, operand/updates
      for scatter ...) share one dtype;
    * the output avals equal ``abstract_eval`` of the input avals (the
      kernels' own signature check, ``runtime.core.shapes.abstract_eval``: the
      kernels accept the equation, and dtypes and shapes agree). Shapes must
      agree exactly, or be 0-d where lax's scalar rule takes them: an implicit
      broadcast (``add(a:f64[3,1], b:f64[4])``) is rejected, the ``promote``
      pass writes it as ``broadcast_in_dim``;
    * the outputs' weak flags equal the op's weak-type rule over the inputs'
      (``runtime.core.weak.WEAK_RULES``, JAX's rules);

    then that every graph output is defined, and that each constant holds an
    array of its declared dtype and shape. The message of every error contains
    the offending line of ``pretty(graph)``.
    """
    defined: set[int] = set()
    for var in graph.inputs:
        if id(var) in defined:
            raise GraphError(f"verify: input {var.type_str()} is listed twice\n    {_head(graph)}")
        if var.const is not None or var.producer is not None:
            raise GraphError(f"verify: input {var.type_str()} is a constant or computed value\n    {_head(graph)}")
        defined.add(id(var))
    for var in graph.consts:
        if id(var) in defined:
            raise GraphError(f"verify: constant {var.type_str()} is declared twice\n    {_head(graph)}")
        const = var.const
        if const is None:
            raise GraphError(f"verify: constant {var.type_str()} holds no array\n    {_head(graph)}")
        if const.shape != var.shape or const.dtype != var.dtype.storage:
            raise GraphError(
                f"verify: constant {var.type_str()} holds an array of {const.dtype}{list(const.shape)}\n"
                f"    {_head(graph)}"
            )
        defined.add(id(var))
    for index, eqn in enumerate(graph.eqns):
        _check_eqn(graph, index, eqn, defined)
        defined.update(id(v) for v in eqn.outputs)
    undefined = [i for i, v in enumerate(graph.outputs) if id(v) not in defined]
    if undefined:
        raise GraphError(f"verify: graph output(s) {undefined} are never defined\n    {outputs_text(graph)}")


def _head(graph: Graph) -> str:
    return str(graph).splitlines()[0]


def _check_eqn(graph: Graph, index: int, eqn: Eqn, defined: set[int]) -> None:
    def fail(problem: str) -> GraphError:
        return GraphError(f"verify: equation {index}: {problem}\n    {eqn_text(graph, eqn)}")

    names = _operand_names(eqn.op, len(eqn.inputs))
    for name, var in zip(names, eqn.inputs, strict=True):
        if id(var) not in defined:
            raise fail(f"operand {name} of {eqn.op.name} is used before it is defined")
    for var in eqn.outputs:
        if id(var) in defined:
            raise fail(f"output {var.type_str()} of {eqn.op.name} is already defined")
        if var.producer is not eqn:
            # ``collect`` walks producers: a value linked to another equation
            # would silently change the graph it rebuilds.
            raise fail(f"output {var.type_str()} of {eqn.op.name} is linked to another equation")
    if not arity_ok(eqn.op, len(eqn.inputs)):
        raise fail(f"{eqn.op.name} takes operands ({', '.join(eqn.op.operands)}), got {len(eqn.inputs)}")
    positions = promoted_positions(eqn.op, len(eqn.inputs))
    if len({eqn.inputs[i].dtype for i in positions}) > 1:
        operands = ", ".join(f"{names[i]}:{eqn.inputs[i].dtype.short}" for i in positions)
        raise fail(f"promoted operands of {eqn.op.name} disagree in dtype ({operands})")
    try:
        avals = abstract_eval(eqn.op, [v.aval for v in eqn.inputs], eqn.params)
    except KERNEL_ERRORS as err:
        raise fail(f"the kernels reject {eqn.op.name}: {err}") from None
    recorded = [v.aval for v in eqn.outputs]
    expected = [(d, tuple(s)) for d, s in avals]
    if recorded != expected:
        raise fail(f"outputs are recorded as {_avals(recorded)} but the kernels give {_avals(expected)}")
    weak = list(output_weak(eqn.op, [v.weak for v in eqn.inputs], eqn.params))
    if [v.weak for v in eqn.outputs] != weak:
        shown = ", ".join(v.type_str() for v in eqn.outputs)
        raise fail(f"outputs are recorded as {shown} but {eqn.op.name}'s weak-type rule gives weak={weak}")


def _operand_names(op: OpDef, count: int) -> list[str]:
    """Operand names for messages: ``x``, ``y``; ``operands[2]`` for variadic ones."""
    names: list[str] = []
    declared = list(op.operands)
    fixed_before = 0
    for name in declared:
        if name.startswith("*"):
            break
        fixed_before += 1
    fixed_after = len(declared) - fixed_before - (1 if fixed_before < len(declared) else 0)
    n_var = count - fixed_before - fixed_after
    for i in range(count):
        if i < fixed_before:
            names.append(declared[i])
        elif fixed_before < len(declared) and i < fixed_before + n_var:
            names.append(f"{declared[fixed_before].lstrip('*')}[{i - fixed_before}]")
        else:
            j = len(declared) - (count - i)
            names.append(declared[j] if 0 <= j < len(declared) else f"arg{i}")
    return names


def _avals(avals: Sequence[tuple[object, tuple[int, ...]]]) -> str:
    return ", ".join(f"{getattr(d, 'short', d)}[{','.join(map(str, s))}]" for d, s in avals)


def example() -> Graph:
    """The raw graph of the docstring example (checked by the tests)."""
    b = GraphBuilder()
    x = b.input("f64", (3,))
    y = b.input("c128", (3,))
    return b.build(b.raw("add", x, y, out=("c128", (3,))))
