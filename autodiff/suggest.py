"""Suggestions for a mistyped name on the command line (``castwise explain addd`` -> ``add``)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, names: Iterable[str], n: int = 3) -> str:
    """``"did you mean add, and?"`` for a mistyped ``word``: the names that contain it (three
    letters or more), then the closest ones (``difflib``); ``""`` when none is near."""
    names = list(dict.fromkeys(names))
    bare = word.strip("*?[]").lower()
    containing = [m for m in names if len(bare) >= 3 and bare in m.lower() and m != word]
    containing.sort(key=lambda m: -difflib.SequenceMatcher(None, word, m).ratio())
    close = difflib.get_close_matches(word, names, n=n, cutoff=0.55)
    picked = list(dict.fromkeys([*containing[:n], *close]))[:n]
    return f"did you mean {', '.join(picked)}?" if picked else ""
