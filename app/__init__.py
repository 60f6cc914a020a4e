"""The kmc application: the ``kmc`` command line for the Kafka model.

Everything here knows the Kafka model, its spec files and its reports: the command line
(``cli``), one module per subcommand (``commands``) and the output-file checks
(``outputs``). The engine core, ``kmc.checker`` outside this package, knows none of
them; a test parses its imports to keep it so.
"""
