"""``autodiff.jit``'s arguments: ``static_argnums`` / ``static_argnames`` and keyword arguments, as ``jax.jit``.

``resolve_static`` turns the two options into positions and names once, when
``jit(f, ...)`` is called: each is inferred from the other through ``f``'s
signature where only one is given (``jax.jit``'s rule: a positional-or-keyword
parameter named by one is static by the other too), and both are checked
against it (an index past ``f``'s positional parameters, a name ``f`` does not
take or a positional-only one raise ``JitArgumentError``). ``bind`` splits one
call's arguments into the static values (hashable; part of the cache key) and
the pytree of the others, which are traced (arrays) or keyed by value (Python
scalars) exactly as positional arguments are.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime.core.errors import CastwiseError
from runtime.core.tensor import Tensor


class JitArgumentError(CastwiseError, ValueError):
    """``autodiff.jit``'s ``static_argnums`` / ``static_argnames`` do not fit ``f``, or a static
    argument's value cannot be part of the cache key (it is not hashable, or it is an array)."""


def _index_tuple(nums: int | Sequence[int] | None, name: str) -> tuple[int, ...] | None:
    if nums is None:
        return None
    items = (nums,) if isinstance(nums, int) else tuple(nums)
    for n in items:
        if not isinstance(n, int) or isinstance(n, bool):
            raise JitArgumentError(
                f"autodiff.jit({name}): static_argnums must be an int or a sequence of ints, got "
                f"{nums!r}; pass positions such as static_argnums=1 or (1, -1)"
            )
    return items


def _str_tuple(names: str | Sequence[str] | None, name: str) -> tuple[str, ...] | None:
    if names is None:
        return None
    items = (names,) if isinstance(names, str) else tuple(names)
    for n in items:
        if not isinstance(n, str):
            raise JitArgumentError(
                f"autodiff.jit({name}): static_argnames must be a str or a sequence of str, got "
                f"{names!r}; pass parameter names such as static_argnames='n' or ('n', 'mode')"
            )
    return items


def resolve_static(
    f: Callable[..., Any],
    name: str,
    static_argnums: int | Sequence[int] | None,
    static_argnames: str | Sequence[str] | None,
) -> tuple[tuple[int, ...], frozenset[str]]:
    """The static positions and names of ``jit(f, static_argnums=..., static_argnames=...)``,
    each inferred from the other through ``f``'s signature as ``jax.jit`` infers them, and checked."""
    nums = _index_tuple(static_argnums, name)
    names = _str_tuple(static_argnames, name)
    if nums is None and names is None:
        return (), frozenset()
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):  # no signature (a builtin, some callables): take them as given
        return nums or (), frozenset(names or ())
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    if nums is None:
        assert names is not None
        nums = tuple(i for i, p in enumerate(params) if p.kind is keyword and p.name in names)
    elif names is None:
        names = tuple(p.name for i, p in enumerate(params) if p.kind is keyword and i in nums)
    kinds = {p.kind for p in params}
    if inspect.Parameter.VAR_POSITIONAL not in kinds and nums:
        n_pos = sum(p.kind in (inspect.Parameter.POSITIONAL_ONLY, keyword) for p in params)
        if -min(nums) > n_pos or max(nums) >= n_pos:
            raise JitArgumentError(
                f"autodiff.jit({name}): static_argnums={nums} is out of range: {name} takes {n_pos} "
                f"positional argument{'s' if n_pos != 1 else ''}; pass positions from {-n_pos} to "
                f"{n_pos - 1}, or name keyword parameters in static_argnames"
            )
    by_name = {p.name: p for p in params}
    positional_only = sorted(n for n in names if n in by_name and by_name[n].kind is inspect.Parameter.POSITIONAL_ONLY)
    if positional_only:
        raise JitArgumentError(
            f"autodiff.jit({name}): static_argnames names the positional-only parameter(s) "
            f"{', '.join(positional_only)} of {name}; pass their positions in static_argnums instead"
        )
    if inspect.Parameter.VAR_KEYWORD not in kinds:
        unknown = sorted(n for n in names if n not in by_name)
        if unknown:
            raise JitArgumentError(
                f"autodiff.jit({name}): static_argnames names {', '.join(map(repr, unknown))}, which "
                f"{name} does not take; its parameters are {', '.join(by_name) or 'none'}"
            )
    return nums, frozenset(names)


def static_key(name: str, where: str, value: Any) -> tuple[Any, ...]:
    """The cache-key part of one static argument (its type and value), or ``JitArgumentError``."""
    if isinstance(value, Tensor | np.ndarray) or hasattr(value, "__array__"):
        raise JitArgumentError(
            f"autodiff.jit({name}): {where} is static (static_argnums / static_argnames) but is an "
            f"array ({type(value).__name__}); an array cannot be part of the cache key (jax.jit "
            "refuses it too). Drop it from the static arguments to trace it, or pass a hashable "
            "Python value (a tuple instead of a list)"
        )
    try:
        hash(value)
    except TypeError as err:
        raise JitArgumentError(
            f"autodiff.jit({name}): {where} is static (static_argnums / static_argnames), so it must "
            f"be hashable to be part of the cache key, but a {type(value).__name__} is not ({err}). "
            "Pass a hashable value (a tuple instead of a list, a frozenset instead of a set), or "
            "drop it from the static arguments"
        ) from None
    if type(value) in (float, complex):  # 0.0 and -0.0 compare equal but must not share an entry
        return (type(value), repr(value))
    return (type(value), value)


@dataclass(frozen=True)
class Bound:
    """One call's arguments, split: ``tree`` is the pytree of the non-static ones (a tuple of the
    positional ones, a dict of the keyword ones), ``key`` the static values' key part, ``call``
    runs ``f`` on a tree of ``tree``'s structure with the static values put back, ``where`` names
    the argument a leaf path of ``tree`` belongs to (for errors)."""

    tree: tuple[tuple[Any, ...], dict[str, Any]]
    key: tuple[Any, ...]
    call: Callable[[Any], Any]
    where: Callable[[str], str]


def bind(
    f: Callable[..., Any],
    name: str,
    nums: tuple[int, ...],
    names: frozenset[str],
    args: Sequence[Any],
    kwargs: dict[str, Any],
) -> Bound:
    """Split a call ``f(*args, **kwargs)`` into its static and traced parts. A negative position
    counts from the end of ``args`` (as ``jax.jit`` resolves it, per call); a position past them
    (a parameter left to its default) is not static in this call."""
    n = len(args)
    static_pos = sorted({i + n if i < 0 else i for i in nums} & set(range(n)))
    key: list[Any] = []
    statics: dict[int, Any] = {}
    for i in static_pos:
        statics[i] = args[i]
        key.append((i, static_key(name, f"argument {i}", args[i])))
    static_kw: dict[str, Any] = {}
    for k in sorted(kwargs):
        if k in names:
            static_kw[k] = kwargs[k]
            key.append((k, static_key(name, f"keyword argument {k!r}", kwargs[k])))
    dyn_pos = [i for i in range(n) if i not in statics]
    tree = (tuple(args[i] for i in dyn_pos), {k: v for k, v in kwargs.items() if k not in static_kw})

    def call(values: tuple[tuple[Any, ...], dict[str, Any]]) -> Any:
        positional, keywords = values
        full: list[Any] = [None] * n
        for i, v in statics.items():
            full[i] = v
        for i, v in zip(dyn_pos, positional, strict=True):
            full[i] = v
        return f(*full, **keywords, **static_kw)

    def where(path: str) -> str:  # "[0][j]rest" (positional j of the traced ones) or "[1]['k']rest"
        top, rest = path[1], path[4:]
        head, _, leaf = rest.partition("]")
        what = f"argument {dyn_pos[int(head)]}" if top == "0" else f"keyword argument {head}"
        return what + (f", leaf {leaf}" if leaf else "")

    return Bound(tree, tuple(key), call, where)
