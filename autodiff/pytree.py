"""Pytrees: nested tuples, lists, dicts, namedtuples and ``None`` as JAX has them.

A thin wrapper over optree (the pytree library PyTorch uses): containers are
walked in C++, dict keys in sorted order, ``None`` is an empty node (no leaf),
and a ``Tensor`` is a leaf. User containers are registered with
``register_pytree_node`` in castwise's own optree namespace, so registrations
never leak into other libraries' use of optree.

Every castwise transform (``grad``, ``vjp``, ``jvp``, ``linearize``, ``jit``,
``jacfwd``/``jacrev``/``hessian``, custom derivative rules, and the test
utilities) flattens its arguments and results with these functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import optree

#: the optree namespace castwise registers user containers in
NAMESPACE = "castwise"

#: the structure of a pytree (optree's ``PyTreeSpec``)
TreeDef = optree.PyTreeSpec


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], TreeDef]:
    """``(leaves, treedef)``: the leaves of ``tree`` in order, and its structure."""
    return optree.tree_flatten(tree, is_leaf, namespace=NAMESPACE)


def tree_unflatten(treedef: TreeDef, leaves: Sequence[Any]) -> Any:
    """The pytree with ``treedef``'s structure and ``leaves`` (in flattening order)."""
    return optree.tree_unflatten(treedef, leaves)


def tree_leaves(tree: Any) -> list[Any]:
    """The leaves of ``tree`` in flattening order."""
    return optree.tree_leaves(tree, namespace=NAMESPACE)


def tree_structure(tree: Any) -> TreeDef:
    """The structure of ``tree``."""
    return optree.tree_structure(tree, namespace=NAMESPACE)


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``f`` applied leafwise to ``tree`` and the trees in ``rest`` (same structure, or a
    structure ``tree`` is a prefix of)."""
    return optree.tree_map(f, tree, *rest, namespace=NAMESPACE)


def register_pytree_node(
    cls: type[Any],
    flatten_fn: Callable[[Any], tuple[Sequence[Any], Any]],
    unflatten_fn: Callable[[Any, Sequence[Any]], Any],
) -> type[Any]:
    """Make ``cls`` a pytree container, with JAX's interface.

    ``flatten_fn(obj) -> (children, aux_data)``; ``unflatten_fn(aux_data,
    children) -> obj``. ``aux_data`` is static (hashable, compared with ``==``).
    """
    return optree.register_pytree_node(cls, flatten_fn, unflatten_fn, namespace=NAMESPACE)  # type: ignore[arg-type]


def leaf_paths(tree: Any) -> tuple[list[str], list[Any], TreeDef]:
    """``(paths, leaves, treedef)``, each path written as JAX's ``keystr`` writes it:
    ``['w'][1]``, ``[0].bias`` (namedtuple fields with a dot)."""
    accessors, leaves, treedef = optree.tree_flatten_with_accessor(tree, namespace=NAMESPACE)
    return [a.codify("") for a in accessors], leaves, treedef


def treedef_is_leaf(treedef: TreeDef) -> bool:
    """Whether ``treedef`` is a bare leaf (the tree was not a container)."""
    return bool(treedef.is_leaf())


def treedef_children(treedef: TreeDef) -> list[TreeDef]:
    """The structures of ``treedef``'s immediate children."""
    return list(treedef.children())


def flatten_up_to(treedef: TreeDef, tree: Any) -> list[Any]:
    """The subtrees of ``tree`` at ``treedef``'s leaf positions (``treedef`` is a prefix of
    ``tree``'s structure; a ``None`` there is kept as a leaf). ``ValueError`` on a mismatch."""
    flattened: list[Any] = treedef.flatten_up_to(tree)
    return flattened
