"""Suggestions for a mistyped name on the command line (``castwise explain addd`` -> ``add``).

The helper lives in the op layer (``runtime.core.errors``), whose errors suggest names too (an
unknown dtype, policy or op); this module keeps the command line's import of it.
"""

from __future__ import annotations

from runtime.core.errors import did_you_mean

__all__ = ["did_you_mean"]
