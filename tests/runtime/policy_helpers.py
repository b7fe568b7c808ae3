"""Helpers the policy tests share: promotion outcomes with errors as a value."""

from __future__ import annotations

from typing import Any

import runtime
from runtime.core.promotion import PromotionError

#: what ``promote`` and ``result`` give where the policy refuses
ERR = "error"


def promote(a: Any, b: Any, policy: str) -> Any:
    """``promote_types`` under ``policy``, or ERR on PromotionError."""
    try:
        return runtime.promote_types(a, b, policy=policy)
    except PromotionError:
        return ERR


def result(*operands: Any, policy: str) -> Any:
    """``result_type`` under ``policy``, or ERR on PromotionError."""
    try:
        return runtime.result_type(*operands, policy=policy)
    except PromotionError:
        return ERR
