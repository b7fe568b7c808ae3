"""The NumPy-named layer: creation, manipulation, elementwise functions under NumPy's names,
reductions and statistics, indexing and ``.at[]``, ``linalg``, ``nn`` and the Tensor methods.

Composed only from the op layer's public functions (``runtime.core.lax``) and its public
vocabulary (dtypes, policies, errors), as ``jax.numpy`` is composed from ``jax.lax``.
"""
