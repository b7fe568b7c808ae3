"""The base of every castwise exception, the op layer's error classes, and did-you-mean suggestions.

The lowest module of the package: it imports nothing of castwise, so every other module (the
dtype catalog, the policies, the shape rules, the graph, ``passes`` and ``autodiff``) can take
its errors from here without an import cycle. Each castwise exception subclasses
``CastwiseError`` and the builtin a caller would catch (``OpTypeError`` is a ``TypeError``,
``ShapeError`` a ``ValueError``), so ``except rt.CastwiseError`` catches everything castwise
raises and ``except TypeError`` keeps working.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable


class CastwiseError(Exception):
    """Base of every exception castwise raises on purpose (``except rt.CastwiseError``): each one
    also subclasses the builtin exception a caller would catch (TypeError, ValueError ...)."""


class ShapeError(CastwiseError, ValueError):
    """Operand shapes or static params are inconsistent with the op."""


class OpTypeError(CastwiseError, TypeError):
    """An operand's dtype is not one the op's signature accepts."""


class OpValueError(CastwiseError, ValueError):
    """An operand's values are ones the function refuses (checked on the values before anything
    runs or is recorded): a negative integer exponent under NumPy's rules, an out-of-range pivot."""


class PrecisionError(ShapeError):
    """A ``precision=`` of dot_general / conv_general_dilated that is none of lax's: ``None``,
    ``'default'`` / ``'high'`` / ``'highest'`` (or lax's aliases), a ``lax.Precision``, or a pair."""


class KernelDTypeError(CastwiseError, TypeError):
    """Operands that the plan promotes to one dtype arrived with different dtypes."""


class ArityError(CastwiseError, TypeError):
    """Wrong number of operands for an op."""


class OpMemoryError(CastwiseError, MemoryError):
    """An op's output does not fit in memory (raised before allocating when the shape
    rule sizes it, or when NumPy's allocation fails), with the op named."""


def did_you_mean(word: str, names: Iterable[str], n: int = 3) -> str:
    """``"did you mean add, and?"`` for a mistyped ``word``: the names that contain it (three
    letters or more), then the closest ones (``difflib``); ``""`` when none is near."""
    names = list(dict.fromkeys(names))
    bare = word.strip("*?[]").lower()
    containing = [m for m in names if len(bare) >= 3 and bare in m.lower() and m != word]
    containing.sort(key=lambda m: -difflib.SequenceMatcher(None, word, m).ratio())
    close = difflib.get_close_matches(word, names, n=n, cutoff=0.55)
    picked = list(dict.fromkeys([*containing[:n], *close]))[:n]
    return f"did you mean {', '.join(picked)}?" if picked else ""


#: a label an error message starts with (``reduce_max: ``, ``nn.softmax: ``, ``asarray: ``): a
#: function's or an op's name, no spaces
_LABEL = re.compile(r"[A-Za-z_][\w.]*")
#: the context an op (or a function) appends: ``[reduce_max operands x:f64[2, 3]; policy 'jax']``
_CONTEXT = re.compile(r"\[[A-Za-z_][\w.]* operands ")


def relabel(name: str, message: str) -> str:
    """``message`` of an error an inner op (or function) raised, as ``name``'s: the labels in
    front (``reduce_max: ``, ``asarray: ``) and the one of the appended context are replaced by
    ``name``, so the user reads the function they called (``matmul: ...``, never
    ``dot_general: ...``), not how it is composed."""
    rest = message
    for _ in range(4):  # the chain of labels in front (a function of a function of an op)
        head, sep, tail = rest.partition(": ")
        if not sep or not _LABEL.fullmatch(head):
            break
        rest = tail
    return f"{name}: {_CONTEXT.sub(f'[{name} operands ', rest)}"
