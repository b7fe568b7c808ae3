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
from autodiff.custom import CustomClosureError, CustomRuleError, CustomVJPForwardError, custom_jvp, custom_vjp
from autodiff.jacobians import hessian, jacfwd, jacrev
from autodiff.jit import Jitted, jit
from autodiff.pytree import register_pytree_node, tree_flatten, tree_map, tree_unflatten
from autodiff.record import detect_writes, enable_grad, is_recording, no_grad
from autodiff.zeros import Zero

__all__ = [
    "CustomClosureError",
    "CustomRuleError",
    "CustomVJPForwardError",
    "Jitted",
    "NonDifferentiableInputError",
    "VmapError",
    "Zero",
    "backward",
    "custom_jvp",
    "custom_vjp",
    "detect_writes",
    "enable_grad",
    "grad",
    "hessian",
    "is_recording",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "linearize",
    "no_grad",
    "register_pytree_node",
    "tree_flatten",
    "tree_map",
    "tree_unflatten",
    "value_and_grad",
    "vjp",
    "vmap",
]
