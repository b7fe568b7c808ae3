"""castwise's array API namespace (``rt.array_api``, ``x.__array_namespace__()``): the Python
array API standard, version 2024.12, over castwise tensors.

Every function is the standard's name, signature and meaning, composed of castwise's op functions
(``runtime.core.lax``) and the NumPy-named layer, so code written against the standard records,
differentiates (``autodiff.grad``), batches (``autodiff.vmap``) and lowers (``autodiff.jit``)
unchanged. Where the standard leaves a choice to the library (the dtype of ``sum`` of int8, the
default float of ``zeros``, the promotion of dtypes it does not relate), the active policy
decides, as everywhere in castwise.

The extensions are ``linalg`` (``runtime.numpy.array_api.linalg``) and, once the FFT work
package lands, ``fft``; ``standard.status()`` and docs/tensor.md list every name of the
standard with castwise's status.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from typing import Any

from runtime.core.dtypes import (
    bfloat16,
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from runtime.core.tensor import Tensor
from runtime.numpy.array_api import linalg, standard, tensor_hooks
from runtime.numpy.array_api.common import ArrayAPIVersionError, AxisError, CopyError, DeviceError
from runtime.numpy.array_api.creation import *  # noqa: F403
from runtime.numpy.array_api.creation import __all__ as _creation
from runtime.numpy.array_api.data_types import *  # noqa: F403
from runtime.numpy.array_api.data_types import __all__ as _data_types
from runtime.numpy.array_api.elementwise import *  # noqa: F403
from runtime.numpy.array_api.elementwise import __all__ as _elementwise
from runtime.numpy.array_api.info import __array_namespace_info__
from runtime.numpy.array_api.manipulation import *  # noqa: F403
from runtime.numpy.array_api.manipulation import __all__ as _manipulation
from runtime.numpy.array_api.searching import *  # noqa: F403
from runtime.numpy.array_api.searching import __all__ as _searching
from runtime.numpy.array_api.statistics import *  # noqa: F403
from runtime.numpy.array_api.statistics import __all__ as _statistics

__array_api_version__ = standard.API_VERSION

bool = bool_  # noqa: A001  (the standard's name)

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

#: where the FFT work package puts its namespace; ``fft`` is this namespace's attribute once it exists
FFT_MODULE = "runtime.numpy.fft"

__all__ = [
    *_creation,
    *_data_types,
    *_elementwise,
    *_manipulation,
    *_searching,
    *_statistics,
    "ArrayAPIVersionError",
    "AxisError",
    "CopyError",
    "DeviceError",
    "Tensor",
    "__array_api_version__",
    "__array_namespace_info__",
    "bfloat16",
    "bool",
    "complex64",
    "complex128",
    "e",
    "float16",
    "float32",
    "float64",
    "inf",
    "int8",
    "int16",
    "int32",
    "int64",
    "linalg",
    "nan",
    "newaxis",
    "pi",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]


def __getattr__(name: str) -> Any:
    # ``fft`` exists once the FFT work package's namespace does (array-api-tests and array-api-compat
    # ask ``hasattr(xp, "fft")`` to decide whether the extension is there)
    if name == "fft" and importlib.util.find_spec(FFT_MODULE) is not None:
        return importlib.import_module(FFT_MODULE)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


tensor_hooks.NAMESPACE = sys.modules[__name__]
