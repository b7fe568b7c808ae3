"""castwise autodiff: recording, JVP/VJP transforms, the user API and test utilities.

Importing ``autodiff`` installs the recorder into ``runtime``'s hook, so ops on
tracked tensors (``requires_grad``) are recorded from then on.
"""

from autodiff import record as _record  # noqa: F401  (installs the recorder)
from autodiff.api import (
    NonDifferentiableInputError,
    backward,
    grad,
    jvp,
    linearize,
    value_and_grad,
    vjp,
)
from autodiff.batching import VmapError, vmap
from autodiff.jit import Jitted, jit
from autodiff.record import enable_grad, is_recording, no_grad
from autodiff.zeros import Zero

__all__ = [
    "Jitted",
    "NonDifferentiableInputError",
    "VmapError",
    "Zero",
    "backward",
    "enable_grad",
    "grad",
    "is_recording",
    "jit",
    "jvp",
    "linearize",
    "no_grad",
    "value_and_grad",
    "vjp",
    "vmap",
]
