"""The program ``spark-submit`` runs: kmc's command line, as a ``.py`` file.

spark-submit runs its primary resource as Python only when the file's name ends in
``.py`` (the ``kmc`` console script would be taken for a JAR), so the documented line is::

    spark-submit --master yarn "$(python -m kmc.app.submit)" check SPEC --engine spark

``python -m kmc.app.submit`` with no arguments prints this file's path; run with
arguments (as spark-submit runs it), it is ``kmc`` itself. Under spark-submit the Spark
engine keeps the master and the settings spark-submit gave (``checker.spark.session``).
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    here = os.path.dirname(os.path.realpath(__file__))
    # Run as a file, Python puts this file's folder first on the module path: kmc's own
    # modules there (cli, specs, ...) must not be importable as top-level modules.
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    if len(sys.argv) == 1:
        print(os.path.abspath(__file__))
        return
    from kmc.app.program import run

    run()


if __name__ == "__main__":
    main()
