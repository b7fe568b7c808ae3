"""``runtime.numpy.linalg``: the ``jax.numpy.linalg`` / ``numpy.linalg`` / ``torch.linalg`` namespace.

``import runtime as rt; q, r = rt.linalg.qr(a)``. The functions live in two modules:
``runtime.numpy.linalg_factor`` (the factorisations, inverses, determinants, solves and norms)
and ``runtime.numpy.linalg_products`` (``pinv``, ``lstsq``, ``matrix_rank``, ``cond``,
``multi_dot``, ``cross``, ``vecdot``, ``trace``, ``matrix_transpose``, ``diagonal``,
``tensorinv``, ``tensorsolve``); each takes jax.numpy.linalg's signature (the array API
standard's where it has the function) and is a composition of castwise's op functions, so a
recording holds exactly what ran, and replays, differentiates, batches and lowers to JAX.
"""

from __future__ import annotations

from runtime.numpy.linalg_factor import (
    EighResult,
    EigResult,
    QRResult,
    SlogdetResult,
    SVDResult,
    cholesky,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    lu_factor,
    lu_solve,
    matrix_norm,
    matrix_power,
    norm,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
    vector_norm,
)
from runtime.numpy.linalg_products import (
    cond,
    cross,
    diagonal,
    lstsq,
    matrix_rank,
    matrix_transpose,
    multi_dot,
    pinv,
    tensorinv,
    tensorsolve,
    trace,
    vecdot,
)

__all__ = [
    "EigResult",
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "lstsq",
    "lu_factor",
    "lu_solve",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "trace",
    "vecdot",
    "vector_norm",
]
