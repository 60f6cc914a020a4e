"""The subcommands of ``kmc``: one module each (see ``kmc.app.cli``)."""
