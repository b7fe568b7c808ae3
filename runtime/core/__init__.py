"""The op layer: dtypes, promotion policies, the op vocabulary, the promotion plan, shape rules,
kernels, the eager executor, the graph IR, version counters and memory checks.

``runtime.core.lax`` holds the op functions (lax's names and strict semantics), one module per op
family, as ``jax._src.lax`` does. Nothing here imports the NumPy-named layer (``runtime.numpy``);
the Tensor methods that layer defines are attached to ``Tensor`` from there.
"""
