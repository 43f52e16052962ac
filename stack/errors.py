"""The one exception type of the embedded stack.

A ``StackError`` is an expected failure a user can fix (a port taken, java missing, a broker
that did not come up). Its message is one line saying what was wrong and what to do; the CLI
prints it without a traceback and exits non-zero. Anything else is a bug and keeps its
traceback.
"""


class StackError(Exception):
    """An expected failure of the embedded stack, with a message that says what to do."""
