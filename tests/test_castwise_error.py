"""Every exception castwise defines is an ``rt.CastwiseError`` and keeps its builtin base.

The classes are found by importing every module of ``runtime``, ``passes`` and ``autodiff`` and
reading what each defines, so a new exception class that forgets the base fails here, naming it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import autodiff
import passes
import runtime as rt

#: control-flow exceptions that never leave the module that raises them, each with where they end
PRIVATE_SIGNALS: dict[str, str] = {
    "autodiff.parity.checks._SkipJvp": "raised and caught inside the sweep's loop over active sets",
    "autodiff.parity.checks._JointRefused": "raised and caught inside the sweep's loop over active sets",
    "autodiff.parity.cli._UsageError": "caught by the parity command line, which prints it as a usage error",
}


def _defined_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in (rt, passes, autodiff):
        modules = [package.__name__] + [
            info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
        ]
        for name in modules:
            module = importlib.import_module(name)
            for obj in vars(module).values():
                if (
                    inspect.isclass(obj)
                    and issubclass(obj, BaseException)
                    and not issubclass(obj, Warning)  # (a warning is not raised as an error)
                    and obj.__module__ == name
                ):
                    found[f"{name}.{obj.__qualname__}"] = obj
    return found


DEFINED = _defined_exceptions()


def test_the_walk_finds_the_known_classes() -> None:
    """The walk itself: it sees the classes of every layer (a walk that found nothing would pass)."""
    names = set(DEFINED)
    for expected in (
        "runtime.core.errors.OpTypeError",
        "runtime.core.promotion.PromotionError",
        "runtime.core.graph.ConcretizationError",
        "runtime.core.inplace.SavedValueModifiedError",
        "passes.lower_jax._common.LoweringError",
        "autodiff.batching.VmapError",
        "autodiff.custom.CustomRuleError",
    ):
        assert expected in names, expected
    assert len(names) >= 20


@pytest.mark.parametrize("name", sorted(set(DEFINED) - set(PRIVATE_SIGNALS)))
def test_every_exception_class_is_a_castwise_error(name: str) -> None:
    cls = DEFINED[name]
    assert issubclass(cls, rt.CastwiseError), f"{name} does not subclass runtime.CastwiseError"
    if cls is not rt.CastwiseError:
        # and a builtin a caller catches today (TypeError, ValueError ...), so ``except`` keeps working
        builtin = [b for b in cls.__mro__ if b.__module__ == "builtins" and b not in (Exception, BaseException, object)]
        assert builtin, f"{name} subclasses no builtin exception beyond Exception"


def test_private_signals_are_still_there() -> None:
    """The exclusions name classes that exist (a stale entry would hide nothing, but mislead)."""
    assert set(PRIVATE_SIGNALS) <= set(DEFINED)


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (rt.OpTypeError, TypeError),
        (rt.ShapeError, ValueError),
        (rt.OpValueError, ValueError),
        (rt.OpMemoryError, MemoryError),
        (rt.PromotionError, TypeError),
        (rt.ConcretizationError, TypeError),
        (rt.ConcretizationIndexError, IndexError),
        (rt.InPlaceError, RuntimeError),
        (rt.GraphError, ValueError),
        (rt.TracedConstantError, ValueError),
    ],
)
def test_a_castwise_error_is_caught_as_its_builtin_and_as_castwise(cls: type[Exception], builtin: type) -> None:
    for catch in (builtin, rt.CastwiseError):
        with pytest.raises(catch):
            raise cls("x: y")


def test_a_real_error_is_caught_as_castwise_error() -> None:
    with pytest.raises(rt.CastwiseError, match="^add: "):
        rt.add(rt.asarray([1.0, 2.0]), rt.asarray([1.0, 2.0, 3.0]))
    with pytest.raises(rt.CastwiseError, match="^dtype: unexpected dtype"):
        rt.dtype("float99")
