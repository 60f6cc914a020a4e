"""What a run says about itself: the --json file it wrote, the engine that really ran, the
matrix's help, and Spark's own progress bar kept off kmc's line."""

from __future__ import annotations

import pytest
from kmc.app.cli import main
from kmc.checker.base.exitcodes import EXIT_OK


def test_the_json_file_is_named_in_one_line(capsys, tmp_path):
    out = tmp_path / "r.json"
    assert main(["check", "specs/ap-c1.toml", "--no-progress", "--json", str(out)]) == EXIT_OK
    err = capsys.readouterr().err
    assert f"kmc: wrote results to {out}" in err.splitlines() and out.is_file()
    assert main(["check", "specs/ap-c1.toml", "--no-progress"]) == EXIT_OK  # no --json: no such line
    assert "wrote results" not in capsys.readouterr().err


def test_the_matrix_help_says_what_it_checks(capsys):
    with pytest.raises(SystemExit):
        main(["matrix", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "all four invariants" not in text and "all five" not in text
    assert "every safety property its configuration checks by default" in text


def test_spark_s_console_progress_bar_is_off_even_when_verbose(monkeypatch):
    # The configuration a new context gets, caught before any JVM starts.
    pyspark = pytest.importorskip("pyspark")
    from kmc.checker.spark import session as spark_session
    from kmc.checker.base.errors import EngineError

    seen = {}

    class Caught(Exception):
        pass

    class FakeContext:
        _active_spark_context = None
        _gateway = object()  # "the JVM is up": no gateway is launched

        def __init__(self, conf=None, gateway=None):
            seen["conf"] = dict(conf.getAll())
            raise Caught

    monkeypatch.setattr(pyspark, "SparkContext", FakeContext)
    for verbose in (False, True):
        seen.clear()
        with pytest.raises(EngineError):
            spark_session.spark_context("local[1]", verbose=verbose)
        assert seen["conf"]["spark.ui.showConsoleProgress"] == "false", verbose


@pytest.mark.slow
def test_a_spark_run_that_never_used_spark_says_so(capsys):
    pytest.importorskip("pyspark")
    code = main(["check", "specs/ap-c1.toml", "--engine", "spark", "--no-progress"])
    out = capsys.readouterr().out
    assert code == EXIT_OK
    assert "engine      spark (no level reached Spark: every level ran on the driver)" in out
