"""Random mixed-dtype programs over every promoting family (for property tests)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

import runtime as rt
from runtime.core import lax as F
from runtime.core.promotion import PromotionError
from runtime.core.shapes import KernelDTypeError, OpTypeError, ShapeError
from runtime.core.tensor import Tensor

PROGRAM_DTYPES = [rt.bool_, rt.int32, rt.float32, rt.float64, rt.complex64, rt.complex128]
INEXACT = [rt.float32, rt.float64, rt.complex64, rt.complex128]
N = 3

SCATTER_DIMS = rt.ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)


def make_value(dtype: rt.DType, rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "bool":
        return rng.integers(0, 2, N).astype(bool)
    if dtype.kind in ("int", "uint"):
        return rng.integers(-4, 5, N).astype(dtype.storage)
    data = rng.uniform(-2, 2, N)
    if dtype.kind == "complex":
        data = data + 1j * rng.uniform(-2, 2, N)
    return data.astype(dtype.storage)


def _step_binary(op: Callable[..., Tensor]) -> Callable[[list[Any], Any], Tensor]:
    return lambda args, draw: op(args[0], args[1])


def _second_of_stack(x: Tensor, y: Tensor, axis: int) -> Tensor:
    """Stack two (N,) values over ``axis`` (0 or -1), then take the second back out."""
    stacked = F.stack([x, y], axis)
    if axis == 0:
        return F.reshape(F.slice(stacked, (1, 0), (2, N)), (N,))
    return F.reshape(F.slice(stacked, (0, 1), (N, 2)), (N,))


STEPS: dict[str, tuple[int, Callable[[list[Any], Any], Tensor]]] = {
    "add": (2, _step_binary(F.add)),
    "sub": (2, _step_binary(F.sub)),
    "mul": (2, _step_binary(F.mul)),
    "max": (2, _step_binary(F.max)),
    "lt": (2, _step_binary(F.lt)),
    "and": (2, _step_binary(F.logical_and)),
    "select": (
        3,
        lambda a, d: F.select(
            F.lt(F.real(a[0]) if a[0].dtype.kind == "complex" else a[0], 0.5) if a[0].dtype.kind != "bool" else a[0],
            a[1],
            a[2],
        ),
    ),
    "clamp": (3, lambda a, d: F.clamp(a[0], a[1], a[2])),
    "concatenate": (3, lambda a, d: F.slice(F.concatenate([a[0], a[1], a[2]], 0), (2,), (2 + N,))),
    "stack": (2, lambda a, d: _second_of_stack(a[0], a[1], d.draw(st.sampled_from([0, -1])))),
    "dot_general": (2, lambda a, d: F.broadcast_in_dim(F.dot_general(a[0], a[1], (((0,), (0,)), ((), ()))), (N,), ())),
    "conv_general_dilated": (
        2,
        lambda a, d: F.reshape(
            F.conv_general_dilated(F.reshape(a[0], (1, 1, N)), F.reshape(a[1], (1, 1, N)), (1,), "SAME"), (N,)
        ),
    ),
    "scatter": (
        2,
        lambda a, d: F.scatter(a[0], np.array([[0], [2]], np.int32), F.slice(a[1], (0,), (2,)), SCATTER_DIMS),
    ),
    "scatter_add": (
        2,
        lambda a, d: F.scatter_add(a[0], np.array([[2], [1]], np.int32), F.slice(a[1], (1,), (3,)), SCATTER_DIMS),
    ),
    "dynamic_update_slice": (2, lambda a, d: F.dynamic_update_slice(a[0], F.slice(a[1], (0,), (2,)), [1])),
    "sin": (1, lambda a, d: F.sin(a[0])),
    "neg": (1, lambda a, d: F.neg(a[0])),
}


@dataclass
class Program:
    """Input specs and the steps drawn (op name, pool indices)."""

    input_dtypes: list[rt.DType]
    tracked: list[bool]
    steps: list[tuple[str, list[int], int]] = field(default_factory=list)
    seed: int = 0

    def inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        return [make_value(d, rng) for d in self.input_dtypes]

    def run(self, values: list[Tensor]) -> list[Tensor]:
        """Run the program; steps that no dtype rule accepts were filtered at draw time."""
        pool: list[Tensor] = list(values)
        for name, picks, extra in self.steps:
            _, fn = STEPS[name]
            pool.append(fn([pool[i] for i in picks], _Fixed(extra)))
        return pool[len(values) :] or pool


class _Fixed:
    """A stand-in for hypothesis' ``data`` that replays a fixed choice."""

    def __init__(self, value: int) -> None:
        self.value = value

    def draw(self, strategy: Any) -> Any:
        return [0, -1][self.value % 2]


_EXPECTED_REFUSALS = (PromotionError, OpTypeError, ShapeError, KernelDTypeError, TypeError)


@st.composite
def programs(draw: Any, min_ops: int = 1, max_ops: int = 30) -> Program:
    """A random program of ``min_ops`` .. ``max_ops`` steps over mixed dtypes."""
    n_inputs = draw(st.integers(2, 4))
    dtypes = draw(st.lists(st.sampled_from(PROGRAM_DTYPES), min_size=n_inputs, max_size=n_inputs))
    tracked = [d.is_inexact and draw(st.booleans()) for d in dtypes]
    prog = Program(dtypes, tracked, seed=draw(st.integers(0, 2**16)))
    pool = [rt.asarray(v) for v in prog.inputs()]
    target = draw(st.integers(min_ops, max_ops))
    attempts = 0
    while len(prog.steps) < target and attempts < 4 * max_ops:
        attempts += 1
        name = draw(st.sampled_from(sorted(STEPS)))
        arity, fn = STEPS[name]
        picks = [draw(st.integers(0, len(pool) - 1)) for _ in range(arity)]
        extra = draw(st.integers(0, 1))
        try:
            out = fn([pool[i] for i in picks], _Fixed(extra))
        except _EXPECTED_REFUSALS:
            continue  # e.g. max on complex, and on floats: not a valid step
        prog.steps.append((name, picks, extra))
        pool.append(out)
    return prog
