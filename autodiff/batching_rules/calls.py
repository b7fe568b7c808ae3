"""Batching rules of the user calls (``custom_jvp_call``, ``custom_vjp_call``).

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from autodiff.batching_rules._common import BATCH_RULES, batch_user_call

# -- user rule calls --------------------------------------------------------------------------------


BATCH_RULES["custom_jvp_call"] = batch_user_call
BATCH_RULES["custom_vjp_call"] = batch_user_call
