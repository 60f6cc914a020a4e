"""kmc under spark-submit, and the Spark settings kmc gives the JVMs it does not start.

docs/spark.md's spark-submit line is run as written (with pyspark's own ``bin/spark-submit``
and a local master): spark-submit runs the ``.py`` file ``python -m kmc.app.submit`` names,
kmc keeps the master spark-submit gave, says so, and refuses a ``--master`` that
contradicts it in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HW = REPO / "specs" / "hw-data-loss.toml"  # stops at a violation: 1834 distinct states, depth 10 (tests/pins.py)
TIMEOUT = 300


def _spark_submit() -> str:
    pyspark = pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("spark-submit needs Java: no 'java' on PATH")
    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


def _submit_file() -> str:
    out = subprocess.run([sys.executable, "-m", "kmc.app.submit"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_the_submit_module_is_a_py_file_that_runs_kmc():
    path = _submit_file()
    assert path.endswith(".py") and Path(path).is_file()
    # Run as a file with arguments (as spark-submit runs it), it is kmc.
    done = subprocess.run([sys.executable, path, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("kmc ")


def test_the_documented_spark_submit_line_names_the_submit_module():
    doc = (REPO / "docs" / "spark.md").read_text()
    assert 'spark-submit --master yarn "$(python -m kmc.app.submit)" check specs/three-replicas-large.toml' in doc
    assert "$(which kmc)" not in doc


def _run_submit(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return subprocess.run([_spark_submit(), *map(str, args)], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=TIMEOUT, start_new_session=True)


@pytest.mark.spark
@pytest.mark.slow
def test_spark_submit_with_a_local_master_runs_on_that_master(tmp_path):
    # docs/spark.md's line with --master 'local[1]': the run's session is spark-submit's.
    out = tmp_path / "bench.json"
    done = _run_submit("--master", "local[1]", _submit_file(), "bench", HW, "--engine", "spark",
                       "--driver-level-limit", "0", "--json", out)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["spark_master"] == "local[1]" and doc["spark_levels"] == 9  # every level after the first on Spark
    assert (doc["distinct_states"], doc["depth"]) == (1834, 10)  # tests/pins.py: hw-data-loss
    # kmc check says which master it runs on, and a --master that contradicts it is one line, exit 2.
    done = _run_submit("--master", "local[1]", _submit_file(), "check", HW, "--engine", "spark",
                       "--master", "local[2]", "--no-progress")
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("kmc:")]
    assert done.returncode == 2 and said == [
        "kmc: error: --master local[2] contradicts spark-submit's master local[1]: under spark-submit, "
        "give the master to spark-submit only"]


def test_without_spark_submit_the_submit_master_is_none(monkeypatch):
    pytest.importorskip("pyspark")
    from kmc.checker.spark.session import check_submit_master, submitted

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert not submitted() and check_submit_master("local[2]") is None


# -- the settings kmc gives the JVMs --------------------------------------------------------


def _conf():
    pytest.importorskip("pyspark")
    from pyspark import SparkConf

    return SparkConf(loadDefaults=False)


def test_the_executors_get_the_driver_s_jvm_options_and_quiet_logging():
    from kmc.checker.spark.session import DRIVER_JAVA_OPTIONS, QUIET_LOG4J2, session_conf

    assert QUIET_LOG4J2.is_file() and "rootLogger.level = warn" in QUIET_LOG4J2.read_text()
    conf = _conf().set("spark.executor.extraJavaOptions", "-Dmine=1")
    session_conf(conf, "spark://127.0.0.1:7077", False, (), QUIET_LOG4J2)
    quiet = f"-Dlog4j2.configurationFile={QUIET_LOG4J2.as_uri()}"
    assert conf.get("spark.master") == "spark://127.0.0.1:7077"
    assert conf.get("spark.driver.extraJavaOptions") == f"{DRIVER_JAVA_OPTIONS} {quiet}"
    # kmc's first, the user's after them (the JVM takes the last of two options of a kind)
    assert conf.get("spark.executor.extraJavaOptions") == f"{DRIVER_JAVA_OPTIONS} {quiet} -Dmine=1"
    assert conf.get("spark.executorEnv.KMC_SPARK_TASK") == "1"
    assert conf.get("spark.python.daemon.module", None) is None  # a cluster's executors: PySpark's daemon
    # --verbose: the JVM options, Spark's own logging
    verbose = session_conf(_conf(), "local[2]", True, ("m",), QUIET_LOG4J2)
    assert verbose.get("spark.executor.extraJavaOptions") == DRIVER_JAVA_OPTIONS
    assert verbose.get("spark.python.daemon.module") == "kmc.checker.spark.daemon"


def test_under_spark_submit_its_master_and_settings_stay():
    from kmc.checker.spark.session import DRIVER_JAVA_OPTIONS, QUIET_LOG4J2, session_conf

    conf = _conf().setMaster("yarn").setAppName("mine").set("spark.ui.enabled", "true")
    conf.set("spark.driver.extraJavaOptions", "-Dd=1")
    session_conf(conf, "yarn", False, (), QUIET_LOG4J2, submit=True)
    assert (conf.get("spark.master"), conf.get("spark.app.name"), conf.get("spark.ui.enabled")) == (
        "yarn", "mine", "true")
    assert conf.get("spark.driver.extraJavaOptions") == "-Dd=1"  # that JVM runs already
    assert conf.get("spark.executor.extraJavaOptions").startswith(DRIVER_JAVA_OPTIONS)
    assert conf.get("spark.log.level") == "WARN"


def test_under_spark_submit_kmc_probes_no_master_of_its_own(monkeypatch):
    # The submit's master is taken as it is (spark-submit has reached it): no syntax check
    # or reachability probe of kmc's, and a --master that names it is no contradiction.
    pytest.importorskip("pyspark")
    from kmc.checker.spark import engine as spark_rows
    from kmc.checker.spark import master as spark_master
    from kmc.checker.spark import session as spark_session

    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_active_spark_context", None)  # (another test's session: not ours)
    monkeypatch.setattr(spark_session, "submit_master", lambda: "spark://127.0.0.1:1")

    def probe(url, *args, **kwargs):
        raise AssertionError(f"probed {url}")

    monkeypatch.setattr(spark_master, "check_reachable", probe)
    assert spark_rows._check_master(None) == "spark://127.0.0.1:1"
    assert spark_rows._check_master("spark://127.0.0.1:1") == "spark://127.0.0.1:1"
    with pytest.raises(spark_session.EngineError, match="contradicts spark-submit's master spark://127.0.0.1:1"):
        spark_rows._check_master("local[2]")


def test_the_log_configuration_and_the_submit_module_are_installed():
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "log4j2.properties" in config["tool"]["setuptools"]["package-data"]["kmc.checker.spark"]
    assert "kmc.app" in config["tool"]["setuptools"]["packages"] and (REPO / "app" / "submit.py").is_file()
    extras = config["project"]["optional-dependencies"]
    assert any(d.startswith("pyarrow") for d in extras["spark"]) and any(d.startswith("moto[server]")
                                                                         for d in extras["test"])
