"""The one exception hierarchy of kmc.

Every error a user can cause (a bad spec file, a bad option, a missing file) is a
``KmcError`` whose message is one line naming the file and the key at fault; the CLI
prints it and exits with code 2, never with a traceback.
"""

from .exitcodes import EXIT_BAD_INPUT


class KmcError(Exception):
    """Base class of every error kmc reports to a user."""

    exit_code = EXIT_BAD_INPUT


class SpecError(KmcError):
    """A spec file is missing, unreadable, malformed, or holds an unknown or bad value."""

    def __init__(self, path: object, key: str | None, message: str) -> None:
        self.path = str(path)
        self.key = key
        self.detail = message
        where = f"{self.path}: {key}: " if key else f"{self.path}: "
        super().__init__(where + message)


class UsageError(KmcError):
    """A command-line option has a bad value."""


class EngineError(KmcError):
    """An engine could not run (for example Spark could not start)."""


class PropertyError(KmcError):
    """A property's check function broke its contract: it returned something that is
    neither ``None`` (holds) nor a ``str`` (the explanation of a violation). A
    programming error in the property, not a violation."""

    def __init__(self, name: str, value: object, expected: str | None = None) -> None:
        self.property = name
        self.value = value
        expected = expected or "None when it holds and a str explaining the violation when it does not"
        super().__init__(
            f"property {name} returned {value!r} ({type(value).__name__}); a property's check must return {expected}"
        )


class ModelError(KmcError):
    """A user's model broke the model protocol (``checker.contract.protocol``): one of its functions
    raised, or returned what the protocol does not allow. A programming error in the model,
    never a verdict: exit code 2, one line naming the function, its file and line."""
