"""The subcommands of ``kmc``: one module each (see ``checker.cli``)."""
