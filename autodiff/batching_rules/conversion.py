"""Batching rules of ``convert``.

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from autodiff.batching_rules._common import BATCH_RULES, batch_elementwise

# -- elementwise ops: one rule for all, ``batch_elementwise`` (``_common``) ------------------------

BATCH_RULES["convert"] = batch_elementwise
