"""Delta's commit conflicts: a commit that lost to a concurrent one (optimistic concurrency)."""

from __future__ import annotations


def delta_conflicts() -> tuple[type[Exception], ...]:
    """Delta's commit conflict exceptions (their Python classes do not share a base class). A
    function, so importing this module does not import pyspark. Importing ``delta.exceptions``
    is also what makes PySpark raise these classes rather than a bare Py4JJavaError: call it
    before the commit that may conflict, not in its ``except`` clause (any ``delta`` import
    does it too)."""
    from delta.exceptions import (
        ConcurrentAppendException,
        ConcurrentDeleteDeleteException,
        ConcurrentDeleteReadException,
        ConcurrentTransactionException,
        ConcurrentWriteException,
        DeltaConcurrentModificationException,
        MetadataChangedException,
        ProtocolChangedException,
    )

    return (
        ConcurrentAppendException,
        ConcurrentDeleteDeleteException,
        ConcurrentDeleteReadException,
        ConcurrentTransactionException,
        ConcurrentWriteException,
        DeltaConcurrentModificationException,
        MetadataChangedException,
        ProtocolChangedException,
    )
