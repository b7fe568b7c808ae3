"""castwise runtime: dtypes, promotion policies, ops, kernels and the eager Tensor."""

# Two layers (docs/architecture.md): the op layer, runtime.core (its op functions in runtime.core.lax,
# also ``rt.lax``), and the NumPy-named layer, runtime.numpy, composed from those op functions. The top
# level speaks NumPy, as jax.numpy does: every function name here means what NumPy means by it
# (rt.round, rt.max, rt.logical_and ...: runtime.numpy.shared_names), and lax's operations are only
# under rt.lax, with lax's names and meanings ("What the top level exports"). The creation,
# manipulation and elementwise modules of runtime.numpy (rt.arange, rt.einsum, rt.maximum ...) are
# exported here too; the jax.nn-style activations stay in their own namespace, ``rt.nn``.
from runtime import numpy
from runtime.core import lax, memory, ops
from runtime.core import operators as _operators  # noqa: F401  (attaches Tensor's operators)
from runtime.core import policies as _policies  # noqa: F401  (registers the built-in policies)
from runtime.core.default_dtype import DefaultDtypeError, get_default_dtype, set_default_dtype
from runtime.core.dtypes import (
    ALL_DTYPES,
    DType,
    bcomplex32,
    bfloat16,
    bool_,
    complex32,
    complex64,
    complex128,
    float4_e2m1fn,
    float6_e2m3fn,
    float6_e3m2fn,
    float8_e3m4,
    float8_e4m3,
    float8_e4m3b11fnuz,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float32r,
    float64,
    int1,
    int2,
    int4,
    int8,
    int16,
    int32,
    int64,
    uint1,
    uint2,
    uint4,
    uint8,
    uint16,
    uint32,
    uint64,
)
from runtime.core.errors import CastwiseError
from runtime.core.executor import asarray
from runtime.core.graph import (
    ConcretizationError,
    ConcretizationIndexError,
    Graph,
    GraphError,
    TracedConstantError,
    evaluate,
    trace,
)
from runtime.core.inplace import InPlaceError, SavedValueModifiedError
from runtime.core.interop import CPU as cpu
from runtime.core.interop import Device, from_dlpack, register_with_jax
from runtime.core.parallel import get_num_threads, set_num_threads
from runtime.core.plan import plan
from runtime.core.promotion import (
    DEFAULT_POLICY,
    Policy,
    PromotionError,
    dtype,
    get_policy,
    get_policy_object,
    policies,
    policy,
    promote_types,
    result_type,
    use_policy,
)
from runtime.core.shapes import (
    ArityError,
    GatherDimensionNumbers,
    KernelDTypeError,
    OpMemoryError,
    OpTypeError,
    OpValueError,
    PrecisionError,
    ScatterDimensionNumbers,
    ShapeError,
)
from runtime.core.tensor import Tensor
from runtime.numpy import array_api, creation, linalg, manipulation, nn
from runtime.numpy import fft as fft  # the namespace rt.fft, as jnp.fft (the op function is rt.lax.fft)
from runtime.numpy import tensor_methods as _tensor_methods  # noqa: F401  (attaches Tensor's NumPy-named methods)
from runtime.numpy.alpha import AlphaError
from runtime.numpy.arrays import *  # noqa: F403
from runtime.numpy.arrays import __all__ as _arrays_names
from runtime.numpy.at_apply import ApplyError  # (importing it attaches .at[index].apply)
from runtime.numpy.creation import *  # noqa: F403
from runtime.numpy.creation import __all__ as _creation_names
from runtime.numpy.elementwise import *  # noqa: F403  (any/all/var/std/prod/clip as functions)
from runtime.numpy.elementwise import __all__ as _elementwise_names
from runtime.numpy.manipulation import *  # noqa: F403
from runtime.numpy.manipulation import __all__ as _manipulation_names
from runtime.numpy.math_functions import *  # noqa: F403
from runtime.numpy.math_functions import __all__ as _math_names
from runtime.numpy.nan_functions import *  # noqa: F403
from runtime.numpy.nan_functions import __all__ as _nan_names
from runtime.numpy.numerics import *  # noqa: F403
from runtime.numpy.numerics import __all__ as _numerics_names
from runtime.numpy.shared_names import *  # noqa: F403  (round, max, logical_and ...: NumPy's meaning)
from runtime.numpy.shared_names import __all__ as _shared_names

bool = bool_  # noqa: A001  (``runtime.bool`` mirrors ``jnp.bool``)

__all__ = [
    *_shared_names,
    *_creation_names,
    *_manipulation_names,
    *_elementwise_names,
    *_arrays_names,
    *_math_names,
    *_nan_names,
    *_numerics_names,
    "array_api",
    "creation",
    "manipulation",
    "nn",
    "numpy",
    "ALL_DTYPES",
    "ArityError",
    "CastwiseError",
    "ConcretizationError",
    "ConcretizationIndexError",
    "GatherDimensionNumbers",
    "Graph",
    "GraphError",
    "InPlaceError",
    "KernelDTypeError",
    "OpMemoryError",
    "OpTypeError",
    "AlphaError",
    "ApplyError",
    "OpValueError",
    "PrecisionError",
    "SavedValueModifiedError",
    "ScatterDimensionNumbers",
    "ShapeError",
    "Tensor",
    "TracedConstantError",
    "asarray",
    "evaluate",
    "lax",
    "linalg",
    "memory",
    "ops",
    "plan",
    "trace",
    "DEFAULT_POLICY",
    "DType",
    "Device",
    "Policy",
    "PromotionError",
    "bcomplex32",
    "bfloat16",
    "bool_",
    "complex32",
    "complex64",
    "complex128",
    "cpu",
    "dtype",
    "from_dlpack",
    "register_with_jax",
    "float4_e2m1fn",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float16",
    "float32",
    "float32r",
    "float64",
    "get_policy",
    "get_policy_object",
    "int1",
    "int2",
    "int4",
    "int8",
    "int16",
    "int32",
    "int64",
    "policies",
    "policy",
    "promote_types",
    "result_type",
    "set_default_dtype",
    "get_default_dtype",
    "set_num_threads",
    "get_num_threads",
    "DefaultDtypeError",
    "uint1",
    "uint2",
    "uint4",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "use_policy",
]
