"""Generated sections of the docs: a table a module computes, kept between two marker lines.

``python -m runtime.core.plan_tables docs/plan.md`` and ``python -m runtime.numpy.array_api
docs/tensor.md`` rewrite their sections with ``splice``; the staleness tests compare
``section`` of the document with what the module generates now.
"""

from __future__ import annotations


def section(text: str, begin: str, end: str) -> str:
    """The generated part of a document's ``text``: from the ``begin`` line through the ``end`` line."""
    start = text.index(begin)
    stop = text.index(end, start) + len(end)
    return text[start:stop] + "\n"


def splice(path: str, begin: str, end: str, generated: str) -> bool:
    """Put ``generated`` (which starts with ``begin`` and ends with ``end``) in place of the
    document's generated part, or append it when there is none yet; True when ``path`` changed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if begin in text:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1].lstrip("\n") if end in rest else ""
    else:
        head, tail = text.rstrip("\n") + "\n\n", ""
    new = head + generated + ("\n" + tail if tail else "")
    if new == text:
        return False
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    return True
