"""The subcommands of ``kmc``: one module each (see ``kmc.checker.app.cli``)."""
