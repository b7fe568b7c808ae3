"""Batching rules of the elementwise unary ops.

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from autodiff.batching_rules._common import BATCH_RULES, batch_elementwise

# -- elementwise ops: one rule for all, ``batch_elementwise`` (``_common``) ------------------------

BATCH_RULES["neg"] = batch_elementwise
BATCH_RULES["abs"] = batch_elementwise
BATCH_RULES["sign"] = batch_elementwise
BATCH_RULES["exp"] = batch_elementwise
BATCH_RULES["log"] = batch_elementwise
BATCH_RULES["expm1"] = batch_elementwise
BATCH_RULES["log1p"] = batch_elementwise
BATCH_RULES["sin"] = batch_elementwise
BATCH_RULES["cos"] = batch_elementwise
BATCH_RULES["tanh"] = batch_elementwise
BATCH_RULES["logistic"] = batch_elementwise
BATCH_RULES["sqrt"] = batch_elementwise
BATCH_RULES["rsqrt"] = batch_elementwise
BATCH_RULES["conj"] = batch_elementwise
BATCH_RULES["real"] = batch_elementwise
BATCH_RULES["imag"] = batch_elementwise
BATCH_RULES["square"] = batch_elementwise
BATCH_RULES["reciprocal"] = batch_elementwise
BATCH_RULES["floor"] = batch_elementwise
BATCH_RULES["ceil"] = batch_elementwise
BATCH_RULES["round"] = batch_elementwise
BATCH_RULES["is_finite"] = batch_elementwise
BATCH_RULES["exp2"] = batch_elementwise
BATCH_RULES["sinh"] = batch_elementwise
BATCH_RULES["cosh"] = batch_elementwise
BATCH_RULES["tan"] = batch_elementwise
BATCH_RULES["asin"] = batch_elementwise
BATCH_RULES["acos"] = batch_elementwise
BATCH_RULES["atan"] = batch_elementwise
BATCH_RULES["asinh"] = batch_elementwise
BATCH_RULES["acosh"] = batch_elementwise
BATCH_RULES["atanh"] = batch_elementwise
BATCH_RULES["cbrt"] = batch_elementwise
BATCH_RULES["not"] = batch_elementwise
BATCH_RULES["population_count"] = batch_elementwise
BATCH_RULES["clz"] = batch_elementwise
BATCH_RULES["integer_pow"] = batch_elementwise
BATCH_RULES["stop_gradient"] = batch_elementwise
