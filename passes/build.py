"""Building graphs by hand: raw equations and a small builder.

``runtime.core.graph.emit`` infers output avals with the kernels' ``abstract_eval``, which
rejects mixed dtypes: it can only build graphs that are already promoted. The
passes, and their tests, also need *raw* graphs: what an eager recording that
wrote no ``convert`` would have stored, e.g. ``add(x:f64[3], y:c128[3])`` whose
output is the ``c128[3]`` eager execution produced. ``raw_eqn`` builds such an
equation from output avals given explicitly, and ``GraphBuilder`` strings
equations together into a readable test program::

    b = GraphBuilder()
    x = b.input("f64", (3,))
    y = b.input("c128", (3,))
    z = b.raw("add", x, y, out=("c128", (3,)))   # as recorded, no convert
    w = b.op("neg", z)                           # avals from abstract_eval
    g = b.build(w)

Nothing here checks that a graph is valid: that is ``passes.verify``'s job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.dtypes import dtype as to_dtype
from runtime.core.graph import Eqn, Graph, Var, emit
from runtime.core.ops import OpDef

#: An aval as callers may spell it: ``(dtype, shape)`` with the dtype as a
#: ``DType`` or anything ``runtime.dtype`` accepts (``"c128"``, ``np.float32``).
AvalLike = tuple[Any, Sequence[int]]
OpLike = OpDef | str


def _opdef(op: OpLike) -> OpDef:
    return op if isinstance(op, OpDef) else ops.get(op)


def _aval(aval: AvalLike) -> tuple[DType, tuple[int, ...]]:
    dtype, shape = aval
    return to_dtype(dtype), tuple(int(n) for n in shape)


def raw_eqn(op: OpLike, inputs: Sequence[Var], params: dict[str, Any], out_avals: Sequence[AvalLike]) -> Eqn:
    """An equation whose output avals are given, not inferred.

    Unlike ``emit`` this never consults the kernels, so it can express what an
    unpromoted recording stored (``add(f64, c128) -> c128``) or a deliberately
    broken graph. The outputs are fresh values produced by the new equation.
    """
    eqn = Eqn(_opdef(op), inputs, dict(params), ())
    eqn.outputs = tuple(Var(d, s, eqn) for d, s in (_aval(a) for a in out_avals))
    return eqn


class GraphBuilder:
    """Accumulates inputs, constants and equations in order, then ``build``s a Graph.

    Every equation added is kept (dead ones too, so ``dce`` has something to
    remove); order of addition is the graph's equation order.
    """

    def __init__(self) -> None:
        self.inputs: list[Var] = []
        self.consts: list[Var] = []
        self.eqns: list[Eqn] = []

    def input(self, dtype: Any, shape: Sequence[int] = ()) -> Var:
        """A new graph input of the given dtype and shape."""
        d, s = _aval((dtype, shape))
        var = Var(d, s)
        self.inputs.append(var)
        return var

    def const(self, value: Any, dtype: Any = None) -> Var:
        """A constant leaf holding ``value`` (stored at ``dtype``'s storage type)."""
        if dtype is None:
            array = np.asarray(value)
            d = to_dtype(array.dtype)
        else:
            d = to_dtype(dtype)
            array = np.asarray(value, dtype=d.storage)
        var = Var(d, tuple(array.shape), None, array)
        self.consts.append(var)
        return var

    def raw(self, op: OpLike, *inputs: Var, out: AvalLike | Sequence[AvalLike], **params: Any) -> Any:
        """Append an equation with explicit output aval(s); returns its output(s).

        ``out`` is one ``(dtype, shape)`` pair, or a list of them for
        multi-output ops (then a tuple of values is returned).
        """
        single = len(out) == 2 and not isinstance(out[0], (tuple, list))
        avals: Sequence[AvalLike] = [out] if single else out  # type: ignore[list-item,assignment]
        eqn = raw_eqn(op, inputs, params, avals)
        self.eqns.append(eqn)
        return eqn.outputs[0] if single else eqn.outputs

    def op(self, op: OpLike, *inputs: Var, **params: Any) -> Any:
        """Append an equation whose avals the kernels' ``abstract_eval`` infers (via ``emit``)."""
        eqn = emit(_opdef(op), inputs, params)
        self.eqns.append(eqn)
        return eqn.outputs[0] if len(eqn.outputs) == 1 else eqn.outputs

    def build(self, *outputs: Var) -> Graph:
        """The graph of everything added so far, returning ``outputs``."""
        return Graph(list(self.inputs), list(self.consts), list(self.eqns), list(outputs))
