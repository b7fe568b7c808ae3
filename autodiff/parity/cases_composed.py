"""The parity sweep's rows of composed functions: PyTorch's ``lerp``, ``addcdiv`` and
``add``/``subtract(alpha=)`` (torch policy) and jax.numpy's ``x.at[idx].apply(func)``.

None is one op: each is a short composition of recorded ops (so its derivatives are the chain
rule through them). A row names the op that produces its result (``op``: the family it reports
under), and ``Spec.targets`` gives the dtypes its operands take, from the function's own
library rules, in place of that op's plan; the JAX side computes the function's definition at
those dtypes with ``jax.numpy`` (``jnp.lerp`` does not exist: the reference is torch's
``a + w (b - a)``), and the sweep's primal, replay, vmap, JVP and VJP checks run as for any op.
A dtype combination the library refuses (``PromotionError`` from ``targets``) must be refused
by castwise too (the case is then unsupported).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import runtime as rt
from autodiff.parity._common import PY_VALUES, Case, PyScalar, Spec, _jnp, _lax, draw_distinct
from runtime.core.dtypes import DType
from runtime.core.promotion import PromotionError, result_type


def _operands(case: Case) -> list[Any]:
    """The case's slots as ``result_type`` takes them: dtypes, and Python scalars by value (weak)."""
    return [PY_VALUES[s.kind] if isinstance(s, PyScalar) else s for s in case.operand_slots]


def _refuse(case: Case, why: str) -> PromotionError:
    return PromotionError(f"{case.spec.name}: {why} ({', '.join(map(str, _operands(case)))}) under {case.policy}")


def _lerp_targets(case: Case) -> list[DType]:
    """torch.lerp: ``input``, ``end`` (and a tensor ``weight``) of one floating or complex dtype;
    a Python ``weight`` (not complex for a real input) takes the input's dtype."""
    tensors = [s for s in case.operand_slots if isinstance(s, DType)]
    d = tensors[0]
    if any(t is not d for t in tensors) or not d.is_inexact:
        raise _refuse(case, "torch.lerp takes tensors of one floating or complex dtype")
    weight = case.operand_slots[2]
    if isinstance(weight, PyScalar) and weight.kind == "complex" and d.kind != "complex":
        raise _refuse(case, "a complex weight for a real input")
    return [d, d, d]


def _lerp_ref(a: Any, b: Any, w: Any) -> Any:
    return a + w * (b - a)  # torch's definition (jax.numpy has no lerp)


def _addcdiv_targets(case: Case) -> list[DType]:
    """torch.addcdiv: every step in the operands' common dtype; integer tensor1 and tensor2 refused."""
    t1, t2 = case.operand_slots[1:]
    if not (isinstance(t1, DType) and t1.is_inexact) and not (isinstance(t2, DType) and t2.is_inexact):
        raise _refuse(case, "torch.addcdiv refuses integer division")
    common = result_type(*_operands(case), policy=case.policy)
    return [common] * 3


ADDCDIV_VALUE = 0.5


def _addcdiv_ref(x: Any, t1: Any, t2: Any) -> Any:
    jnp = _jnp()
    return x + t1 * jnp.asarray(ADDCDIV_VALUE, x.dtype) / t2  # the product first, as PyTorch's kernel


def _alpha_targets(alpha: Any, subtract: bool) -> Any:
    """torch.add/sub(alpha=): the operands' common dtype; a float alpha needs a floating or complex
    result, sub takes no bool tensors."""

    def targets(case: Case) -> list[DType]:
        common = result_type(*_operands(case), policy=case.policy)
        if isinstance(alpha, float) and not common.is_inexact:
            raise _refuse(case, "a float alpha for an integral result")
        if subtract and common.kind == "bool":
            raise _refuse(case, "torch.sub of bool tensors")
        return [common, common]

    return targets


def _alpha_ref(alpha: Any, subtract: bool) -> Any:
    def ref(x: Any, y: Any) -> Any:
        scaled = y * _jnp().asarray(alpha, x.dtype)  # alpha in the result's dtype, as PyTorch
        return x - scaled if subtract else x + scaled

    return ref


#: positions of a [4] vector: 0 twice (func applied twice), 2 once, 1 and 3 untouched
AT_INDEX = np.array([0, 2, 0])
AT_TIMES = np.bincount(AT_INDEX, minlength=4)


def _square(v: Any) -> Any:
    return v * v


def _at_apply_ours(x: Any) -> Any:
    return x.at[rt.asarray(AT_INDEX)].apply(_square)


def _at_apply_ref(x: Any) -> Any:
    jnp = _jnp()
    once = _square(x)
    return jnp.where(AT_TIMES >= 2, _square(once), jnp.where(AT_TIMES >= 1, once, x))


def _same(case: Case) -> list[DType]:
    (d,) = case.operand_slots
    assert isinstance(d, DType)
    return [d]


def _plus_product(a: Any, b: Any) -> Any:
    return a + b + a * b  # (1 + a)(1 + b) - 1: associative, 0 its identity; no monoid op of castwise's


def _reduce_plus_product_ours(x: Any) -> Any:
    return rt.lax.reduce(x, 0, _plus_product, (1,))


def _reduce_plus_product_ref(x: Any) -> Any:
    # Over 3 elements castwise's pairwise tree and XLA's fold combine in the same order:
    # c(c(x0, x1), x2), the identity init making c(0, v) = v exact, so the values agree exactly.
    return _lax().reduce(x, np.zeros((), x.dtype), _plus_product, (1,))


def _window_plus_product_ours(x: Any) -> Any:
    return rt.lax.reduce_window(x, 0, _plus_product, (1, 3), (1, 1), "VALID")


def _window_plus_product_ref(x: Any) -> Any:
    return _lax().reduce_window(x, np.zeros((), x.dtype), _plus_product, (1, 3), (1, 1), "VALID")


def _argmax_pair(a: Any, b: Any) -> Any:
    """(value, index): the larger value, the smaller index on a tie (lax.reduce's argmax)."""
    take_a = rt.lax.logical_or(rt.lax.gt(a[0], b[0]), rt.lax.logical_and(rt.lax.eq(a[0], b[0]), rt.lax.lt(a[1], b[1])))
    return rt.lax.select(take_a, a[0], b[0]), rt.lax.select(take_a, a[1], b[1])


def _reduce_argmax_ours(x: Any) -> Any:
    index = rt.lax.iota(rt.int32, x.shape, 1)
    lowest = rt.lax.reduce_min(x, (0, 1))  # an init no row exceeds, its index after every real one
    value, _ = rt.lax.reduce((x, index), (lowest, 2**31 - 1), _argmax_pair, (1,))
    return value


def _reduce_argmax_ref(x: Any) -> Any:
    # The row's values are distinct (the generator), so the pair's value is the maximum; taken
    # elementwise over the three columns (a max reduction would start from -inf, which
    # float8_e8m0fnu lacks). lax.gt refuses complex operands, as the pair's comparison does.
    jnp = _jnp()
    _lax().gt(x[:, 0], x[:, 1])
    return jnp.maximum(jnp.maximum(x[:, 0], x[:, 1]), x[:, 2])


def _gen_distinct_rows(slots: Any, rng: np.random.Generator) -> list[Any]:
    (slot,) = slots
    return [draw_distinct(slot, (2, 3), 1, rng)]


def specs() -> list[Spec]:
    """The sweep's rows of the composed functions."""
    return [
        Spec("lerp", "add", rt.lerp, _lerp_ref, ("input", "end", "weight"), ((3,), (3,), (3,)),
             ("any", "any", "any"), scalar_ok=(2,), policies=("torch",), targets=_lerp_targets),
        Spec("addcdiv", "add", lambda x, t1, t2: rt.addcdiv(x, t1, t2, value=ADDCDIV_VALUE), _addcdiv_ref,
             ("input", "tensor1", "tensor2"), ((3,), (3,), (3,)), ("any", "any", "nonzero"), policies=("torch",),
             targets=_addcdiv_targets),
        Spec("add_alpha", "add", lambda x, y: rt.add(x, y, alpha=2), _alpha_ref(2, False), ("x", "y"),
             ((3,), (3,)), ("any", "any"), scalar_ok=(1,), policies=("torch",), targets=_alpha_targets(2, False)),
        Spec("subtract_alpha", "sub", lambda x, y: rt.subtract(x, y, alpha=0.5), _alpha_ref(0.5, True),
             ("x", "y"), ((3,), (3,)), ("any", "any"), scalar_ok=(1,), policies=("torch",),
             targets=_alpha_targets(0.5, True)),
        Spec("at_apply", "scatter", _at_apply_ours, _at_apply_ref, ("x",), ((4,),), ("any",),
             policies=("jax", "torch"), targets=_same),
        Spec("reduce_plus_product", "add", _reduce_plus_product_ours, _reduce_plus_product_ref, ("x",),
             ((2, 3),), ("any",), policies=("jax",), targets=_same),
        Spec("reduce_window_plus_product", "add", _window_plus_product_ours, _window_plus_product_ref, ("x",),
             ((2, 4),), ("any",), policies=("jax",), targets=_same, values_only=True),
        Spec("reduce_argmax", "select", _reduce_argmax_ours, _reduce_argmax_ref, ("x",), ((2, 3),), ("any",),
             policies=("jax",), targets=_same, gen=_gen_distinct_rows),
    ]  # fmt: skip
