"""Batching rules of the elementwise binary ops (and the comparisons, logical and shift ops).

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from autodiff.batching_rules._common import BATCH_RULES, batch_elementwise

# -- elementwise ops: one rule for all, ``batch_elementwise`` (``_common``) ------------------------

BATCH_RULES["add"] = batch_elementwise
BATCH_RULES["sub"] = batch_elementwise
BATCH_RULES["mul"] = batch_elementwise
BATCH_RULES["div"] = batch_elementwise
BATCH_RULES["rem"] = batch_elementwise
BATCH_RULES["pow"] = batch_elementwise
BATCH_RULES["max"] = batch_elementwise
BATCH_RULES["min"] = batch_elementwise
BATCH_RULES["atan2"] = batch_elementwise
BATCH_RULES["floor_div"] = batch_elementwise
BATCH_RULES["eq"] = batch_elementwise
BATCH_RULES["ne"] = batch_elementwise
BATCH_RULES["lt"] = batch_elementwise
BATCH_RULES["le"] = batch_elementwise
BATCH_RULES["gt"] = batch_elementwise
BATCH_RULES["ge"] = batch_elementwise
BATCH_RULES["and"] = batch_elementwise
BATCH_RULES["or"] = batch_elementwise
BATCH_RULES["xor"] = batch_elementwise
BATCH_RULES["shift_left"] = batch_elementwise
BATCH_RULES["shift_right_arithmetic"] = batch_elementwise
BATCH_RULES["shift_right_logical"] = batch_elementwise
BATCH_RULES["nextafter"] = batch_elementwise
BATCH_RULES["complex"] = batch_elementwise
