"""The pass registry: every graph pass by name, and the standard pipeline.

Each entry carries the pass function (whose docstring shows its rewrite), its
kind — a ``"rewrite"`` returns a new graph, a ``"check"`` returns ``None`` or
raises ``GraphError`` — and an ``example`` that builds the docstring's input
graph, so the tests can check that each docstring tells the truth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

# ``from module import name`` (not ``from passes import module``): the package
# re-exports each pass function under its module's name, shadowing the module.
from passes.canonicalize import canonicalize
from passes.canonicalize import example as canonicalize_example
from passes.dce import dce
from passes.dce import example as dce_example
from passes.promote import example as promote_example
from passes.promote import promote
from passes.verify import example as verify_example
from passes.verify import verify
from runtime.core.graph import Graph
from runtime.core.promotion import Policy


@dataclass(frozen=True)
class Pass:
    """One registered pass."""

    name: str
    fn: Callable[..., Any]
    kind: Literal["rewrite", "check"]
    #: builds the input graph of the docstring example
    example: Callable[[], Graph]
    #: whether ``fn`` takes a ``policy=`` argument
    takes_policy: bool = False

    @property
    def doc(self) -> str:
        return self.fn.__doc__ or ""

    def __call__(self, graph: Graph, policy: str | Policy | None = None) -> Any:
        return self.fn(graph, policy) if self.takes_policy else self.fn(graph)


PASSES: dict[str, Pass] = {}


def register_pass(p: Pass) -> Pass:
    """Add ``p`` to the registry (later passes, e.g. lowering, register here too)."""
    if p.name in PASSES:
        raise ValueError(f"pass {p.name!r} is registered twice")
    PASSES[p.name] = p
    return p


register_pass(Pass("promote", promote, "rewrite", promote_example, takes_policy=True))
register_pass(Pass("canonicalize", canonicalize, "rewrite", canonicalize_example))
register_pass(Pass("dce", dce, "rewrite", dce_example))
register_pass(Pass("verify", verify, "check", verify_example))

#: The rewrites that turn a raw recording into what eager execution ran, in order:
#: dtypes first, then shapes (as eager execution converted, then reshaped).
DEFAULT_PIPELINE: tuple[str, ...] = ("promote", "canonicalize", "dce")


def get_pass(name: str) -> Pass:
    """The registered pass ``name``; ``KeyError`` naming the registry otherwise."""
    try:
        return PASSES[name]
    except KeyError:
        raise KeyError(f"unknown pass {name!r}; registered: {', '.join(PASSES)}") from None


def run_passes(
    graph: Graph,
    names: Iterable[str] = DEFAULT_PIPELINE,
    *,
    policy: str | Policy | None = None,
    check: bool = True,
) -> Graph:
    """Apply the rewrites ``names`` in order, then ``verify`` the result when ``check``.

    ``policy`` goes to the passes that plan promotions (``None``: the active policy).
    """
    for name in names:
        p = get_pass(name)
        result = p(graph, policy)
        if p.kind == "rewrite":
            graph = result
    if check:
        verify(graph)
    return graph
