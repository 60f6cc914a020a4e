"""The exit codes of ``kmc``, defined once (the CLI, every subcommand and the tests use these).

0 everything checked holds, 1 a property is violated, 2 bad input (a one-line message
naming the file and the key, never a traceback), 3 (with ``--check-expect``) the result
contradicts the spec's ``[expect]`` table, 4 stopped at ``--max-memory`` before any
violation was found (the run can be resumed), 128 + the signal number when stopped by a
signal: 130 for SIGINT, 143 for SIGTERM (as a shell reports it).
"""

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_BAD_INPUT = 2
EXIT_UNEXPECTED = 3
EXIT_RESOURCE_LIMIT = 4
EXIT_INTERRUPTED = 130  # SIGINT
EXIT_TERMINATED = 143  # SIGTERM

# For help texts: every code and what it means, in one place.
SUMMARY = (
    "Exit codes: 0 all hold, 1 a violation, 2 bad input, 3 result contradicts the "
    "spec's [expect] (with --check-expect), 4 stopped at --max-memory, 130 interrupted "
    "(SIGINT), 143 stopped (SIGTERM)."
)


def signal_exit_code(signum: int) -> int:
    """128 + ``signum``, as a shell reports a process ended by that signal."""
    return 128 + signum
