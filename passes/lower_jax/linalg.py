"""Lowerings of the linear algebra ops (``runtime.core.ops`` family ``linalg``).

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

from typing import Any

from passes.lower_jax._common import LOWERINGS, Lowered, _param
from runtime.core.graph import Eqn

# -- linear algebra ---------------------------------------------------------------------------


def eigh_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.eigh reading only the ``lower`` (or upper) triangle: (eigenvectors, eigenvalues)."""
    from jax import lax

    v, w = lax.linalg.eigh(x, lower=bool(_param(eqn, "lower")), symmetrize_input=False)
    return (v, w)


LOWERINGS["eigh"] = eigh_lowering


def cholesky_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.cholesky reading the lower triangle (NaNs for a non-positive-definite matrix)."""
    from jax import lax

    return (lax.linalg.cholesky(x, symmetrize_input=False),)


LOWERINGS["cholesky"] = cholesky_lowering


def triangular_solve_lowering(eqn: Eqn, a: Any, b: Any) -> Lowered:
    """lax.linalg.triangular_solve with the same flags."""
    from jax import lax

    flags = {
        name: bool(_param(eqn, name)) for name in ("left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal")
    }
    return (lax.linalg.triangular_solve(a, b, **flags),)


LOWERINGS["triangular_solve"] = triangular_solve_lowering


def lu_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.lu: (packed factors, pivots, permutation)."""
    from jax import lax

    packed, pivots, permutation = lax.linalg.lu(x)
    return (packed, pivots, permutation)


LOWERINGS["lu"] = lu_lowering


def qr_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.qr (no pivoting): (q, r)."""
    from jax import lax

    q, r = lax.linalg.qr(x, full_matrices=bool(_param(eqn, "full_matrices")))
    return (q, r)


LOWERINGS["qr"] = qr_lowering


def svd_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.svd: (u, s, vh), or (s,) without compute_uv."""
    from jax import lax

    full, uv = bool(_param(eqn, "full_matrices")), bool(_param(eqn, "compute_uv"))
    out = lax.linalg.svd(x, full_matrices=full, compute_uv=uv)
    return tuple(out) if uv else (out,)


LOWERINGS["svd"] = svd_lowering


def eig_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.linalg.eig (XLA CPU only): eigenvalues, then the eigenvectors asked for."""
    from jax import lax

    left, right = bool(_param(eqn, "compute_left_eigenvectors")), bool(_param(eqn, "compute_right_eigenvectors"))
    derivs = bool(_param(eqn, "enable_eigvec_derivs"))
    return tuple(
        lax.linalg.eig(x, compute_left_eigenvectors=left, compute_right_eigenvectors=right, enable_eigvec_derivs=derivs)
    )


LOWERINGS["eig"] = eig_lowering


def geqrf_lowering(eqn: Eqn, x: Any) -> Lowered:
    """geqrf (private in jax.lax.linalg at 0.10): through ``jnp.linalg.qr(mode="raw")``, which
    returns its packed reflectors transposed, so they are swapped back."""
    import jax.numpy as jnp

    h, taus = jnp.linalg.qr(x, mode="raw")
    return (jnp.swapaxes(h, -1, -2), taus)


LOWERINGS["geqrf"] = geqrf_lowering
