"""``python -m runtime.numpy.array_api docs/tensor.md``: rewrite the generated table of the
standard's names and castwise's status for each (``standard.table``)."""

from __future__ import annotations

import sys

import runtime  # noqa: F401  (the whole runtime, as users import it)
from runtime.numpy import array_api
from runtime.numpy.array_api import standard

for doc in sys.argv[1:]:
    print(("updated " if standard.update_docs(doc, array_api) else "up to date: ") + doc)
