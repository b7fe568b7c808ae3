"""``python -m runtime.numpy.array_api docs/tensor.md``: rewrite the generated table of the
standard's names and castwise's status for each (``standard.table``)."""

from __future__ import annotations

import sys

import runtime  # noqa: F401  (the whole runtime, as users import it)
from runtime.numpy import array_api
from runtime.numpy.array_api import standard


def main(docs: list[str]) -> None:
    """Rewrite the table in each of ``docs``, saying which changed."""
    for doc in docs:
        print(("updated " if standard.update_docs(doc, array_api) else "up to date: ") + doc)


# Guarded: walking the package (tests/test_castwise_error.py does) imports this module too,
# and must not rewrite whatever files the importer's command line names.
if __name__ == "__main__":
    main(sys.argv[1:])
