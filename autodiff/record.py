"""Recording of tracked eager ops.

``Tensor.requires_grad_()`` or ``runtime.asarray(..., requires_grad=True)``
makes a tracked leaf. Each op with at least one tracked input is recorded by
``runtime.graph.record_op``: untracked inputs become constant leaves that
reference the same array, and every operand whose dtype differs from its plan
target gets an explicit ``convert`` equation, from the same ``plan`` call
eager execution made. Ops with no tracked input record nothing.

Recording state is thread-local: ``no_grad()`` turns it off for the current
thread only, and the recorded values hang off the tensors, so two threads
build independent graphs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from runtime import hooks
from runtime.dtypes import DType
from runtime.graph import record_op
from runtime.ops import OpDef
from runtime.tensor import Tensor


def record_eager(
    op: OpDef, params: dict[str, Any], inputs: Sequence[Tensor], targets: tuple[DType, ...], outputs: Sequence[Tensor]
) -> None:
    """The recorder ``autodiff`` installs into ``runtime.hooks``."""
    record_op(op, params, inputs, targets, outputs)


@contextmanager
def no_grad() -> Iterator[None]:
    """Record nothing in this thread inside the block (results are untracked)."""
    with hooks.recorder_override(None):
        yield


@contextmanager
def enable_grad() -> Iterator[None]:
    """Record again inside a ``no_grad`` block."""
    with hooks.recorder_override(record_eager):
        yield


def is_recording() -> bool:
    """True when ops with tracked inputs are recorded in this thread."""
    return hooks.current_recorder() is not None


hooks.install_recorder(record_eager)
