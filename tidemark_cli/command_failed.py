"""The one expected failure of a ``tidemark`` command."""


class CommandFailed(Exception):
    """A command could not do what was asked, for a reason the user can act on: the message
    says what was wrong and what to do (one or a few lines, no traceback). Exit code 1."""
