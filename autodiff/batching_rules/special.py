"""Batching rules of the special functions.

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from autodiff.batching_rules._common import BATCH_RULES, batch_elementwise

# -- elementwise ops: one rule for all, ``batch_elementwise`` (``_common``) ------------------------

BATCH_RULES["erf"] = batch_elementwise
BATCH_RULES["erfc"] = batch_elementwise
BATCH_RULES["erf_inv"] = batch_elementwise
BATCH_RULES["lgamma"] = batch_elementwise
BATCH_RULES["digamma"] = batch_elementwise
BATCH_RULES["bessel_i0e"] = batch_elementwise
BATCH_RULES["bessel_i1e"] = batch_elementwise
BATCH_RULES["polygamma"] = batch_elementwise
BATCH_RULES["zeta"] = batch_elementwise
BATCH_RULES["igamma"] = batch_elementwise
BATCH_RULES["igammac"] = batch_elementwise
BATCH_RULES["igamma_grad_a"] = batch_elementwise
