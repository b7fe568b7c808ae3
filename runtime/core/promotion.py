"""Promotion policies: ``promote_types``, ``result_type`` and the active policy.

A policy answers two questions: ``promote_types(a, b)`` for two dtypes, and
``result_type(*operands)`` where operands may also be Python scalars (weak) and
0-d values. Policies are values; one is active per thread (``use_policy``) and
any call may name another with ``policy=``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, Final, Literal, overload

import numpy as np

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.errors import CastwiseError, OpTypeError, OpValueError, did_you_mean

PyKind = Literal["bool", "int", "float", "complex"]

DEFAULT_POLICY: Final = "jax"


class PromotionError(CastwiseError, TypeError):
    """No implicit promotion path exists between dtypes under a policy."""


class ResultTypeError(PromotionError, ValueError):
    """``result_type`` was given nothing to promote. A ``ValueError`` too, as ``jnp.result_type()``
    raises one ("at least one array or dtype is required")."""


class Operand:
    """One ``result_type`` operand after classification.

    ``pykind`` is set for Python scalars (weakly typed in most policies);
    ``zero_dim`` marks 0-d arrays and tensors (torch's category rule).
    """

    __slots__ = ("dtype", "pykind", "zero_dim")

    def __init__(self, dtype: DType | None, pykind: PyKind | None, zero_dim: bool) -> None:
        self.dtype = dtype
        self.pykind = pykind
        self.zero_dim = zero_dim

    def describe(self) -> str:
        if self.pykind is not None:
            return f"python {self.pykind}"
        assert self.dtype is not None
        return self.dtype.name + (" (0-d)" if self.zero_dim else "")


#: Python's own scalar types, looked up by exact type: they are the weak operands.
#: NumPy scalars subclass ``float``/``complex`` (``np.float64``, ``np.complex128``)
#: but carry a dtype: they are strong, as in JAX and NumPy 2 (NEP 50).
PY_SCALAR_KINDS: Final[dict[type, PyKind]] = {bool: "bool", int: "int", float: "float", complex: "complex"}


def classify(x: Any) -> Operand:
    """Turn an operand into an ``Operand``: the one classification of operands.

    ``result_type``, ``promote_types`` and the eager executor (every op, every
    policy) all call it. Python ``bool``/``int``/``float``/``complex`` values
    (by exact type) are weak scalars; NumPy and ml_dtypes scalars, arrays and
    tensors are strong, 0-d when their shape is ``()``; a type or dtype names a
    dtype. Anything else is a ``TypeError`` naming the value.
    """
    kind = PY_SCALAR_KINDS.get(type(x))
    if kind is not None:
        return Operand(None, kind, True)
    if isinstance(x, (DType, type)):
        # A type (np.float32, ml_dtypes.bfloat16, jnp.float32) names a dtype; its
        # class-level ``shape``/``dtype`` attributes are descriptors, not values.
        return Operand(dt.dtype(x), None, False)
    if isinstance(x, np.generic):  # before the Python-scalar check: np.float64 is a float
        return Operand(dt.dtype(x.dtype), None, True)
    if isinstance(x, (bool, int, float, complex)):
        # a subclass of a Python scalar that is not NumPy's (an IntEnum member, ...):
        # neither weak (JAX and NumPy key weak types on the exact type) nor a dtype
        raise OpTypeError(
            f"unexpected operand {x!r} of type {type(x).__name__}: a subclass of a Python scalar is "
            f"neither a weak scalar nor a dtype; pass {type(x).__mro__[1].__name__}(x) or an array"
        )
    shape = getattr(x, "shape", None)
    x_dtype = getattr(x, "dtype", None)
    if shape is not None and x_dtype is not None:
        if isinstance(x_dtype, DType):
            return Operand(x_dtype, None, len(shape) == 0)
        if isinstance(x_dtype, np.dtype) and not x_dtype.isnative:  # big-endian data: its native dtype
            x_dtype = x_dtype.newbyteorder("=")
        return Operand(dt.dtype(x_dtype), None, len(shape) == 0)
    return Operand(dt.dtype(x), None, False)


def operand_dtype(x: Any) -> DType:
    """The dtype a ``promote_types`` argument names: a dtype, a type, or a strong value
    (a NumPy scalar, an array, a tensor) by ``classify``; Python scalars have none."""
    op = classify(x)
    if op.dtype is None:
        raise OpTypeError(
            f"promote_types takes dtypes; {x!r} is a weak Python {op.pykind} "
            "(use result_type for values, or name its dtype)"
        )
    return op.dtype


class WeakOperand(Operand):
    """A weakly typed tensor as a plan operand: its dtype is known, but it joins the
    lattice as the weak node of its kind, like a Python scalar of that kind
    (``runtime.core.weak`` explains weak types)."""

    __slots__ = ()

    def __init__(self, dtype: DType, zero_dim: bool) -> None:
        super().__init__(dtype, WEAK_NODE[dtype.kind], zero_dim)

    def describe(self) -> str:
        assert self.dtype is not None
        return f"weak {self.dtype.name}" + (" (0-d)" if self.zero_dim else "")


#: The weak lattice node of each dtype kind (a weak uint is a weak int, as in JAX).
WEAK_NODE: Final[dict[str, PyKind]] = {
    "bool": "bool",
    "int": "int",
    "uint": "int",
    "float": "float",
    "complex": "complex",
}


class Policy:
    """Base of every promotion policy.

    Subclasses implement ``_promote(a, b)`` (return a DType, or ``None`` when no
    path exists) and may override ``_result_type`` for scalar rules. Results of
    ``_promote`` are cached in a table, so ``promote_types`` is a dictionary
    lookup after the first call.
    """

    name: str = ""
    summary: str = ""
    #: The dtypes the policy knows; others are refused, even with themselves.
    dtypes: tuple[DType, ...] = dt.ALL_DTYPES
    #: Where true division of integers goes (``None``: it is an error).
    true_divide_float: DType | None = dt.float64
    #: An integer ``pow`` whose exponent array holds a negative value: ``"truncate"`` gives the
    #: value truncated toward zero (PyTorch's rule), ``"raise"`` refuses it (NumPy's). A negative
    #: scalar exponent is refused under every policy (NumPy, PyTorch and jax.numpy all do).
    negative_int_power: str = "truncate"

    def true_divide_dtype(self, integer: DType) -> DType | None:
        """The float that true division of ``integer`` (or bool) operands produces."""
        return self.true_divide_float

    def __init__(self) -> None:
        self._table: dict[tuple[DType, DType], DType | None] = {}
        self._known = frozenset(self.dtypes)

    # -- pairs ---------------------------------------------------------------
    def _promote(self, a: DType, b: DType) -> DType | None:
        raise NotImplementedError

    #: how a refused pair's message starts (the Neuron policy uses its compiler's words)
    no_path_text: str = "no implicit dtype promotion path"

    def no_path(self, a: DType | str, b: DType | str, reason: str = "") -> PromotionError:
        """The error raised when ``a`` and ``b`` have no promotion path."""
        names = [x.name if isinstance(x, DType) else x for x in (a, b)]
        text = f"{self.no_path_text} for {names[0]} and {names[1]} under policy {self.name!r}"
        return PromotionError(text + (f": {reason}" if reason else ""))

    def explain_failure(self, a: DType, b: DType) -> str:
        """A short reason for a refused pair (used in error messages)."""
        for d in (a, b):
            if d not in self._known:
                return f"{d.name} is not a dtype of this policy"
        return ""

    def promote_types(self, a: DType, b: DType) -> DType:
        """The dtype both ``a`` and ``b`` are converted to; ``PromotionError`` if none."""
        key = (a, b)
        try:
            result = self._table[key]
        except KeyError:
            if a in self._known and b in self._known:
                result = a if a is b and self._identity_ok(a) else self._promote(a, b)
            else:
                result = None
            self._table[key] = result
        if result is None:
            raise self.no_path(a, b, self.explain_failure(a, b))
        return result

    def _identity_ok(self, a: DType) -> bool:
        return True

    def can_promote(self, a: DType, b: DType) -> bool:
        try:
            self.promote_types(a, b)
        except PromotionError:
            return False
        return True

    # -- operands ------------------------------------------------------------
    def result_type(self, operands: Sequence[Operand]) -> DType:
        """The common dtype of classified operands."""
        if not operands:
            raise ResultTypeError(
                f"result_type: at least one array or dtype is required, got none (policy {self.name!r})"
            )
        return self._result_type(operands)

    def _result_type(self, operands: Sequence[Operand]) -> DType:
        """Default rule: strong operands fold with ``promote_types``; a Python
        scalar joins only if its category is above the strong result's, taking the
        policy's default dtype for its kind."""
        strong: DType | None = None
        for op in operands:
            if op.dtype is not None:
                strong = op.dtype if strong is None else self.promote_types(strong, op.dtype)
        # Only the highest-kind Python scalar can decide, whatever the operand order.
        kinds = [op.pykind for op in operands if op.pykind is not None]
        if kinds:
            pykind = max(kinds, key=dt.KIND_CATEGORY.__getitem__)
            scalar = self.scalar_default(pykind, strong)
            if strong is None:
                strong = scalar
            elif dt.KIND_CATEGORY[pykind] > strong.category:
                strong = self.promote_types(strong, scalar)
        assert strong is not None
        return strong

    def scalar_default(self, pykind: PyKind, context: DType | None) -> DType:
        """The dtype a Python scalar of ``pykind`` takes when it decides the result."""
        return {"bool": dt.bool_, "int": dt.int64, "float": dt.float64, "complex": dt.complex128}[pykind]


class LatticePolicy(Policy):
    """A policy defined, like JAX's, by a DAG of "immediately promotes to" edges.

    The result of two types is their least upper bound: the unique smallest
    type above both. Weak Python scalars are nodes of the lattice too.
    """

    #: node -> nodes immediately above it. Nodes are DTypes or weak kind names.
    edges: ClassVar[dict[DType | str, list[DType | str]]] = {}
    #: dtype a weak-only result takes
    weak_default: ClassVar[dict[str, DType]] = {"int": dt.int64, "float": dt.float64, "complex": dt.complex128}
    #: How operands that are all weak promote (JAX's ``_lattice_result_type``): ``True`` joins
    #: their strong dtypes and keeps the result weak (weak int8 + weak int8 is a weak int8 in
    #: jax.numpy), ``False`` joins their weak nodes (JAX's strict mode: a weak int64).
    all_weak_joins_dtypes: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__()
        self._upper = _upper_bounds(self.edges)

    def _lub(self, a: DType | str, b: DType | str) -> DType | str | None:
        common = self._upper[a] & self._upper[b]
        # The least element of the common upper bounds is the one whose own upper
        # bound set contains all of them.
        for node in common:
            if self._upper[node] >= common:
                return node
        return None

    def _promote(self, a: DType, b: DType) -> DType | None:
        if a not in self._upper or b not in self._upper:
            return None
        node = self._lub(a, b)
        if isinstance(node, str):
            return self.weak_default[node]
        return node

    def _result_type(self, operands: Sequence[Operand]) -> DType:
        acc: DType | str | None = None
        for op in operands:
            node: DType | str
            if op.pykind is not None and op.pykind != "bool":
                node = op.pykind
            elif op.pykind == "bool":
                node = dt.bool_
            else:
                assert op.dtype is not None
                node = op.dtype
            if node not in self._upper:
                assert isinstance(node, DType)
                raise self.no_path(node, node, f"{node.name} is not a dtype of this policy")
            if acc is None:
                acc = node
                continue
            joined = self._lub(acc, node)
            if joined is None:
                raise self.no_path(_label(acc), _label(node), self._explain_nodes(acc, node))
            acc = joined
        assert acc is not None
        return self.weak_default[acc] if isinstance(acc, str) else acc

    def _explain_nodes(self, a: DType | str, b: DType | str) -> str:
        """The policy's reason for a refused join of lattice nodes (a weak node has none
        of its own: the strong dtype's reason stands for both)."""
        strong = [n for n in (a, b) if isinstance(n, DType)]
        if not strong:
            return ""
        return self.explain_failure(strong[0], strong[-1])


def _label(node: DType | str) -> str:
    return node.name if isinstance(node, DType) else f"weak {node}"


def _upper_bounds(edges: dict[Any, list[Any]]) -> dict[Any, frozenset[Any]]:
    """Reflexive-transitive closure of ``edges`` (iterative)."""
    result: dict[Any, frozenset[Any]] = {}
    for start in edges:
        seen = {start}
        stack = [start]
        while stack:
            for nxt in edges.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        result[start] = frozenset(seen)
    return result


# -- registry and the active policy ------------------------------------------

_REGISTRY: dict[str, Policy] = {}


#: caches keyed by policy name (the eager executor's plan caches); emptied
#: whenever a policy is (re)registered, so a replaced policy is never served stale
PLAN_CACHES: list[dict[Any, Any]] = []


def register_policy(policy: Policy) -> Policy:
    """Add a policy to the registry under ``policy.name``."""
    _REGISTRY[policy.name] = policy
    for cache in PLAN_CACHES:
        cache.clear()
    return policy


def policies() -> tuple[str, ...]:
    """Names of the registered policies."""
    return tuple(_REGISTRY)


#: policies activated by object (``use_policy(policy)``) that are not the one registered under
#: their name, by the key the active-policy state holds for them (``name@id``: the plan caches,
#: keyed by that state, then never mix them up with the registered one). Held for good, so an
#: id is never reused for another policy while a cache may still hold its key.
_UNREGISTERED: dict[str, Policy] = {}


def get_policy_object(name: str | Policy | None = None) -> Policy:
    """Resolve ``name`` (or the active policy when ``None``) to a Policy; an unknown name raises
    ``OpValueError`` with the registered names (and the near ones, for a misspelt name)."""
    return lookup_policy(name, "get_policy_object")


def lookup_policy(name: str | Policy | None, fn: str) -> Policy:
    """``get_policy_object(name)`` for a function ``fn`` that takes a policy argument: an unknown
    name is an ``OpValueError`` starting ``fn: ``, a name that is no string an ``OpTypeError``."""
    if name is None:
        name = _STATE.__dict__.get("name", DEFAULT_POLICY)
    if isinstance(name, Policy):
        return name
    if not isinstance(name, str):
        raise OpTypeError(
            f"{fn}: a policy is a registered policy's name or a Policy object, got {type(name).__name__} "
            f"{name!r} [policy {get_policy()!r}]"
        )
    found = _REGISTRY.get(name) or _UNREGISTERED.get(name)
    if found is not None:
        return found
    hint = did_you_mean(name, _REGISTRY)
    raise OpValueError(
        f"{fn}: unknown promotion policy {name!r}; {hint + ' ' if hint else ''}known: {', '.join(_REGISTRY)} "
        f"(register_policy adds one) [policy {get_policy()!r}]"
    )


class _PolicyState(threading.local):
    name: str = DEFAULT_POLICY
    #: ``set_default_dtype``'s setting in this thread (``None``: the policy's own default), read
    #: by policies with such a setting (torch's ``scalar_default``).
    default_float: DType | None = None
    #: What the executor's plan cache keys a call under: the policy's key, and the default
    #: float where one is set, so a plan made under one default never serves another.
    plan_key: Any = DEFAULT_POLICY


_STATE = _PolicyState()


def get_policy() -> str:
    """Name of the policy active in this thread (default ``"jax"``)."""
    name = _STATE.name
    found = _UNREGISTERED.get(name) if name not in _REGISTRY else None
    return name if found is None else found.name


@contextmanager
def use_policy(name: str | Policy) -> Iterator[Policy]:
    """Make ``name`` (a registered policy's name, or a ``Policy`` object) the active policy in
    this thread for the ``with`` block. An object is activated itself, also where another policy
    is registered under its name (nothing is registered)."""
    with _activate(lookup_policy(name, "use_policy")) as active:
        yield active


@contextmanager
def policy(name: str | Policy) -> Iterator[Policy]:
    """``use_policy`` under the design's spelling, ``with runtime.policy("torch"):`` (its errors
    name ``policy``)."""
    with _activate(lookup_policy(name, "policy")) as active:
        yield active


@contextmanager
def _activate(chosen: Policy) -> Iterator[Policy]:
    previous = _STATE.name
    key = chosen.name
    if _REGISTRY.get(key) is not chosen:
        key = f"{chosen.name}@{id(chosen):x}"
        _UNREGISTERED[key] = chosen
    _STATE.name = key
    _STATE.plan_key = plan_key(key, _STATE.default_float)
    try:
        yield chosen
    finally:
        _STATE.name = previous
        _STATE.plan_key = plan_key(previous, _STATE.default_float)


def plan_key(name: str, default_float: DType | None) -> Any:
    """The executor's plan-cache key for policy key ``name`` under default float ``default_float``."""
    return name if default_float is None else (name, default_float)


def dtype(x: Any) -> DType:
    """The castwise ``DType`` that ``x`` names (``runtime.dtype``): a ``DType``, a name or short
    name (``"float32"``, ``"f32"``), a NumPy or ml_dtypes type or dtype, a JAX dtype, or Python's
    ``bool``/``int``/``float``/``complex``. Anything else raises ``OpTypeError`` starting
    ``dtype: unexpected dtype``, with the near names for a misspelt one and the active policy."""
    try:
        return dt.dtype(x)
    except OpTypeError as err:
        raise OpTypeError(f"dtype: {err} [policy {get_policy()!r}]") from None


def promote_types(a: Any, b: Any, policy: str | Policy | None = None) -> DType:
    """The dtype two dtypes promote to under ``policy`` (default: the active one)."""
    pol = lookup_policy(policy, "promote_types")
    try:
        da, db = operand_dtype(a), operand_dtype(b)
    except OpTypeError as err:
        raise OpTypeError(f"promote_types: {err} [policy {pol.name!r}]") from None
    return pol.promote_types(da, db)


def honours_weak(policy: Policy) -> bool:
    """Whether ``policy`` has weak types (the JAX lattices: ``jax``, ``jax-strict``)."""
    known = _HONOURS.get(policy)
    if known is None:
        known = _HONOURS[policy] = isinstance(policy, LatticePolicy) and "float" in policy._upper
    return known


_HONOURS: dict[Policy, bool] = {}


@overload
def result_type(
    *operands: Any, policy: str | Policy | None = None, return_weak_type_flag: Literal[False] = False
) -> DType: ...
@overload
def result_type(
    *operands: Any, policy: str | Policy | None = None, return_weak_type_flag: Literal[True]
) -> tuple[DType, bool]: ...
def result_type(
    *operands: Any, policy: str | Policy | None = None, return_weak_type_flag: bool = False
) -> DType | tuple[DType, bool]:
    """The common dtype of ``operands``: dtypes, tensors, arrays, 0-d values and
    Python scalars (weak), under ``policy`` (default: the active one).

    With ``return_weak_type_flag`` the result is ``(dtype, weak)``, as JAX's
    ``dtypes.result_type(..., return_weak_type_flag=True)``: weak when every operand
    is weak (a Python bool is not), or when their join is a weak node (``int8`` with
    ``uint64`` is the weak float); always ``False`` under a policy without weak types.

    Under a policy with weak types a weak tensor (``Tensor.weak``) counts as the weak
    node of its kind, as in ``jnp.result_type``: for a weak ``w = asarray(1.0)``,
    ``result_type(w, float16_tensor)`` is float16, as ``add`` of them is. As in
    ``jnp.result_type``, a weak result takes the policy's default dtype of its kind
    (weak int8 with weak int8 is int64 here, while ``add`` of them keeps int8).
    """
    pol = lookup_policy(policy, "result_type")
    try:
        classified = [classify(x) for x in operands]
    except OpTypeError as err:
        raise OpTypeError(f"result_type: {err} [policy {pol.name!r}]") from None
    if honours_weak(pol):
        classified = [
            WeakOperand(op.dtype, op.zero_dim) if op.dtype is not None and getattr(x, "weak", False) is True else op
            for x, op in zip(operands, classified, strict=True)
        ]
        if (
            isinstance(pol, LatticePolicy)
            and pol.all_weak_joins_dtypes
            and classified
            and all(op.pykind is not None and (op.dtype is not None or op.pykind != "bool") for op in classified)
        ):
            # all weak: JAX joins their dtypes, then gives the default dtype of the join's kind
            # (weak bool with weak uint8 is uint64 in jnp.result_type)
            joined = pol.result_type(
                [Operand(op.dtype or pol.weak_default[str(op.pykind)], None, False) for op in classified]
            )
            out = _WEAK_RESULT.get(joined.kind, joined)
            return (out, joined.kind != "bool") if return_weak_type_flag else out
    result = pol.result_type(classified)
    if not return_weak_type_flag:
        return result
    return result, honours_weak(pol) and _join_is_weak(pol, classified)


def _join_is_weak(policy: Policy, operands: Sequence[Operand]) -> bool:
    """Whether the lattice join of ``operands`` is a weak node (the rule ``runtime.core.weak``
    applies to a promoting op's operands; here for ``result_type``'s flag)."""
    if not isinstance(policy, LatticePolicy) or not operands:
        return False
    acc: Any = None
    for x in operands:
        node: Any = x.pykind if x.pykind is not None and x.pykind != "bool" else (x.dtype or dt.bool_)
        if node not in policy._upper:
            return False
        acc = node if acc is None else policy._lub(acc, node)
        if acc is None:
            return False
    return isinstance(acc, str)


#: the dtype ``jnp.result_type`` gives a weak result of each kind (x64)
_WEAK_RESULT: Final[dict[str, DType]] = {
    "int": dt.int64,
    "uint": dt.uint64,
    "float": dt.float64,
    "complex": dt.complex128,
}


def table(policy: str | Policy, dtypes: Iterable[DType] | None = None) -> dict[tuple[DType, DType], DType | None]:
    """The full pairwise promotion table of a policy (``None`` marks an error)."""
    pol = lookup_policy(policy, "table")
    ds = tuple(pol.dtypes if dtypes is None else dtypes)
    out: dict[tuple[DType, DType], DType | None] = {}
    for a in ds:
        for b in ds:
            out[a, b] = pol.promote_types(a, b) if pol.can_promote(a, b) else None
    return out
