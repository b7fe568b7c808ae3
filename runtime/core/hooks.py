"""The small hooks through which eager execution reaches a recorder.

``runtime`` never imports ``autodiff``. Instead, a recorder is installed here:
``autodiff`` installs the global one on import (dependency inversion), and
``runtime.trace`` / ``autodiff.no_grad`` push thread-local overrides (``None``
turns recording off for the thread). The eager executor calls the current
recorder for each op that has at least one input on a graph.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ContextDecorator
from typing import Any

#: recorder(op, params, inputs, planned dtypes, outputs[, planned shapes]): ``inputs``
#: are the operands as they came (Python scalars already materialised as 0-d Tensors
#: of their planned dtype), ``outputs`` the eager results; the sixth argument, the
#: shape plan (``runtime.core.shape_plan``), is passed only when an operand was broadcast.
Recorder = Callable[..., None]

_global_recorder: Recorder | None = None
_UNSET: Any = object()


class _Local(threading.local):
    def __init__(self) -> None:
        self.stack: list[Recorder | None] = []


_LOCAL = _Local()
#: open ``recorder_override`` blocks in all threads: while there are none, the
#: global recorder is every thread's (the hot path skips the thread-local lookup)
_OVERRIDES = [0]
_OVERRIDES_LOCK = threading.Lock()


def install_recorder(recorder: Recorder | None) -> Recorder | None:
    """Install the global ``recorder`` (or remove it with ``None``); return the previous one."""
    global _global_recorder
    previous = _global_recorder
    _global_recorder = recorder
    binary = _BINARY_OF.get(recorder) if recorder is not None else None
    BINARY[:] = [recorder, binary] if binary is not None else [None, None]
    return previous


def register_binary(recorder: Recorder, binary: Callable[..., None]) -> None:
    """Declare ``binary`` the two-operand entry point of ``recorder`` (``BINARY``): used
    whenever ``recorder`` is installed, now or later."""
    _BINARY_OF[recorder] = binary
    if _global_recorder is recorder:
        BINARY[:] = [recorder, binary]


def current_recorder() -> Recorder | None:
    """The recorder for this thread: the innermost override, else the global one."""
    if not _OVERRIDES[0]:
        return _global_recorder
    stack = _LOCAL.stack
    return stack[-1] if stack else _global_recorder


def recording_disabled() -> bool:
    """True inside an ``autodiff.no_grad()`` block (the innermost override records nothing):
    where PyTorch lets an in-place write reach a leaf that requires grad."""
    if not _OVERRIDES[0]:
        return False
    stack = _LOCAL.stack
    return bool(stack) and stack[-1] is None


class recorder_override(ContextDecorator):  # lower case: it keeps the name it had as a function
    """Use ``recorder`` (``None``: record nothing) in this thread for the block.

    A class rather than a generator context manager: every ``grad`` enters two of
    these, and a generator costs several times more per block.
    """

    __slots__ = ("recorder",)

    def __init__(self, recorder: Recorder | None) -> None:
        self.recorder = recorder

    def __enter__(self) -> None:
        _LOCAL.stack.append(self.recorder)
        with _OVERRIDES_LOCK:
            _OVERRIDES[0] += 1

    def __exit__(self, *exc: object) -> None:
        with _OVERRIDES_LOCK:
            _OVERRIDES[0] -= 1
        _LOCAL.stack.pop()


#: ``[recorder, binary]``: while ``recorder`` is the current one, ``apply_binary`` calls
#: ``binary(op, params, x, y, targets, result)`` in its place (the same recording, without
#: the argument tuples and the checks a general call needs). ``recorder`` is the global one,
#: or ``None`` when it has no such entry point (``register_binary``; ``install_recorder``
#: keeps the pair in step)
BINARY: list[Any] = [None, None]
_BINARY_OF: dict[Recorder, Callable[..., None]] = {}

#: backward(tensor, cotangent, retain_graph) installed by autodiff for Tensor.backward.
backward_hook: Callable[..., None] | None = None
