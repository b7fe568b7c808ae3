"""``rt.can_cast`` (issue 23, the PyTorch habits): the active policy's library decides.

Oracles: ``np.can_cast`` under numpy, ``jnp.can_cast`` under jax, and under torch PyTorch's
documented rule (``c10::canCast``: no complex to non-complex, no floating to integral, nothing
but bool to bool), checked against ``torch.can_cast`` itself where torch is installed.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import runtime as rt

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128"]  # fmt: skip
PAIRS = list(itertools.product(DTYPES, DTYPES))


def _torch_rule(a: str, b: str) -> bool:
    """PyTorch's documented casting rule, by dtype category."""
    kind = {"bool": "bool", "complex64": "complex", "complex128": "complex"}
    ka = kind.get(a, "float" if a.startswith(("float", "bfloat")) else "int")
    kb = kind.get(b, "float" if b.startswith(("float", "bfloat")) else "int")
    return not (
        (ka == "complex" and kb != "complex") or (ka == "float" and kb == "int") or (ka != "bool" and kb == "bool")
    )


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_can_cast_follows_the_policys_library(a: str, b: str) -> None:
    jnp = pytest.importorskip("jax.numpy")
    with rt.use_policy("numpy"):
        assert rt.can_cast(a, b) == bool(np.can_cast(np.dtype(jnp.dtype(a)), np.dtype(jnp.dtype(b))))
    with rt.use_policy("jax"):
        assert rt.can_cast(a, b) == bool(jnp.can_cast(jnp.dtype(a), jnp.dtype(b)))
        assert rt.can_cast(rt.asarray(np.zeros(2, jnp.dtype(a))), b) == rt.can_cast(a, b)
    with rt.use_policy("torch"):
        assert rt.can_cast(a, b) == _torch_rule(a, b)


def test_can_cast_matches_torch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    with rt.use_policy("torch"):
        for a, b in PAIRS:
            assert rt.can_cast(a, b) == torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)


def test_can_cast_refuses_what_is_no_dtype() -> None:
    with pytest.raises(rt.OpTypeError, match="can_cast: to 'float99' is no dtype"):
        rt.can_cast("float32", "float99")
