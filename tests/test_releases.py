"""Kafka by its version number: ``kafka = "3.6.1"`` in a spec's ``[model]`` (and ``--kafka`` on
the command line) sets the truncation rule, the options and the known bugs of that release
from one table (model/releases.py), which ``kmc matrix --versions`` reads too; a key the spec
writes overrides it, the header says so, and an unknown release is one line naming the
nearest ones.
"""

from __future__ import annotations

import re

import pytest
from kmc.app.cli import main
from kmc.checker.base.errors import SpecError
from kmc.checker.base.exitcodes import EXIT_BAD_INPUT
from kmc.model.spec import parse_spec

V21, KIP279, LE, HW = "leader-epoch-2.1", "leader-epoch-kip279", "leader-epoch", "high-watermark"
G, E, K, AP, BE, F = (
    "hw_requires_min_isr",
    "eligible_leader_replicas",
    "last_known_leader",
    "alter_partition",
    "broker_epochs",
    "truncate_on_fetch",
)
B13141, B14704, B13916, B15221, B16540, B16234 = (
    "KAFKA-13141", "KAFKA-14704", "KAFKA-13916", "KAFKA-15221", "KAFKA-16540", "KAFKA-16234")

# docs/model.md's table, written out by hand: (release, metadata or None) -> (metadata, truncation,
# the options on, every bug of the release once each option it needs is on).
DOCUMENTED = {
    ("0.10.2.1", None): ("zookeeper", HW, set(), []),
    ("0.10.0", None): ("zookeeper", HW, set(), []),
    ("0.11.0.3", None): ("zookeeper", LE, set(), []),
    ("1.0.2", None): ("zookeeper", LE, set(), []),
    ("1.1.1", None): ("zookeeper", LE, set(), []),
    ("2.0.1", None): ("zookeeper", KIP279, set(), []),
    ("2.1.0", None): ("zookeeper", V21, set(), []),
    ("2.6.3", None): ("zookeeper", V21, set(), []),
    ("2.7.2", None): ("zookeeper", V21, {AP}, []),
    ("2.8.0", None): ("zookeeper", V21, {AP, F}, [B13141, B14704]),
    ("2.8.0", "kraft"): ("kraft", V21, {AP, F}, [B13141, B14704, B13916]),
    ("2.8.1", None): ("zookeeper", V21, {AP, F}, [B14704]),
    ("3.2.3", "kraft"): ("kraft", V21, {AP, F}, [B14704, B13916]),
    ("3.3.1", None): ("kraft", V21, {AP, F}, [B14704]),
    ("3.4.0", None): ("kraft", V21, {AP, F}, [B14704]),
    ("3.4.1", None): ("kraft", V21, {AP, F}, []),
    ("3.5.0", None): ("kraft", V21, {AP, BE, F}, [B15221]),
    ("3.6.1", None): ("kraft", V21, {AP, BE, F}, [B15221]),
    ("3.6.1", "zookeeper"): ("zookeeper", V21, {AP, BE, F}, [B15221]),
    ("3.7.0", None): ("kraft", V21, {G, AP, BE, F}, [B16540, B16234]),
    ("3.7.1", None): ("kraft", V21, {G, AP, BE, F}, [B16540]),
    ("3.8.0", None): ("kraft", V21, {G, AP, BE, F}, [B16540]),
    ("3.8.1", None): ("kraft", V21, {G, AP, BE, F}, [B16540]),
    ("4.0.0", None): ("kraft", V21, {G, AP, BE, F}, []),
    ("4.1.0", None): ("kraft", V21, {G, E, K, AP, BE, F}, []),
    ("4.1.1", None): ("kraft", V21, {G, E, K, AP, BE, F}, []),
}
_OPTIONS = (G, E, K, AP, BE, F)


def spec(text: str, kafka=None):
    return parse_spec(("[model]\nreplicas = 2\n" + text).encode(), "x.toml", kafka=kafka)


def _every_option_on(release: str, metadata, on: set) -> str:
    """The [model] lines that turn on every option a bug of this release needs."""
    text = f'kafka = "{release}"\n' + (f'metadata = "{metadata}"\n' if metadata else "")
    text += "max_controlled_shutdowns = 1\n"
    kraft37 = release >= "3.7" and (metadata or "kraft") == "kraft" and release[0] != "0"
    if kraft37:  # the eligible leader replicas and a failed directory: KRaft 3.7+
        text += "max_disk_failures = 1\n" + ("eligible_leader_replicas = true\n" if E not in on else "")
    return text


@pytest.mark.parametrize("release, metadata", list(DOCUMENTED))
def test_each_release_is_its_documented_configuration(release, metadata):
    mode, rule, on, bugs = DOCUMENTED[(release, metadata)]
    # as it ships: every option of the table, and only the bugs whose option is on
    plain = spec(f'kafka = "{release}"\n' + (f'metadata = "{metadata}"\n' if metadata else ""))
    assert plain.config.truncation == rule
    assert {o for o in _OPTIONS if getattr(plain.config, o)} == on
    assert plain.kafka.release.metadata == mode and plain.kafka.overrides == ()
    # the fetch path's bugs and KAFKA-15221 need only options the release turns on itself
    assert list(plain.config.all_bugs) == [b for b in bugs if b in (B13141, B14704, B15221)]
    # with every option the bugs need switched on, every bug of the release is set
    full = spec(_every_option_on(release, metadata, on))
    assert sorted(full.config.all_bugs) == sorted(bugs)


def test_3_9_runs_as_3_8_without_the_eligible_leader_replicas_and_is_refused_with_them():
    # 3.9 treated every restart as an unclean shutdown (KAFKA-16952): its ELR is not modelled
    assert spec('kafka = "3.9.1"\nmax_disk_failures = 1').config == spec('kafka = "3.8.0"\nmax_disk_failures = 1').config
    with pytest.raises(SpecError) as e:
        spec('kafka = "3.9.0"\neligible_leader_replicas = true')
    assert e.value.key == "model.eligible_leader_replicas" and "KAFKA-16952" in e.value.detail
    assert "(the nearest: 3.8.x, 4.0.x)" in e.value.detail


def test_a_release_sets_a_bug_only_when_its_option_is_on():
    # KAFKA-16234 lives in a failed log directory, KAFKA-16540 in the eligible leader replicas
    assert spec('kafka = "3.7.0"').config.all_bugs == ()
    assert spec('kafka = "3.7.0"\nmax_disk_failures = 1').config.bugs == (B16234,)
    assert spec('kafka = "3.7.0"\neligible_leader_replicas = true').config.bugs == (B16540,)
    assert spec('kafka = "3.7.1"\neligible_leader_replicas = true\nmax_disk_failures = 1').config.bugs == (B16540,)
    # KAFKA-13916 (KRaft before 3.3) needs controlled shutdowns, KAFKA-15221 broker epochs
    assert spec('kafka = "3.1.0"\nmetadata = "kraft"').config.bugs == ()
    assert spec('kafka = "3.1.0"\nmetadata = "kraft"\nmax_controlled_shutdowns = 2').config.bugs == (B13916,)
    assert spec('kafka = "3.1.0"\nmax_controlled_shutdowns = 2').config.bugs == ()  # ZooKeeper: not this id
    assert spec('kafka = "3.6.0"\nbroker_epochs = false').config.bugs == ()
    # the fetch path's bugs go with the fetch path
    assert spec('kafka = "2.8.0"\ntruncate_on_fetch = false').config.all_bugs == ()
    # the last known leader of 4.1 goes with the eligible leader replicas (an upgraded cluster)
    upgraded = spec('kafka = "4.1.0"\neligible_leader_replicas = false').config
    assert not upgraded.eligible_leader_replicas and not upgraded.last_known_leader


def test_the_spec_s_keys_override_the_release_and_the_header_names_each():
    s = spec('kafka = "3.7.0"\neligible_leader_replicas = true\nbroker_epochs = true\nunflushed_loss = true')
    assert s.config.eligible_leader_replicas and s.config.unflushed_loss and s.config.bugs == (B16540,)
    # broker_epochs is the release's own value: no override; unflushed_loss is the scenario's
    assert s.kafka.overrides == (("eligible_leader_replicas", True, False),)
    assert s.kafka.text() == "3.7.0 (KRaft); the spec overrides eligible_leader_replicas = true (3.7.0: false)"
    s = spec('kafka = "3.6.1"\nbugs = []\ntruncate_on_fetch = false')
    assert s.config.all_bugs == () and not s.config.truncate_on_fetch and s.config.broker_epochs
    assert s.kafka.text() == (
        "3.6.1 (KRaft); the spec overrides truncate_on_fetch = false (3.6.1: true), bugs = [] (3.6.1: [KAFKA-15221])")
    # a list of bugs written in the spec replaces the release's, through the one validator
    assert spec('kafka = "2.8.0"\nfetch_bugs = ["KAFKA-14704"]').config.fetch_bugs == (B14704,)
    with pytest.raises(SpecError, match=r"model.bugs: KAFKA-16234 needs model.max_disk_failures > 0"):
        spec('kafka = "3.7.0"\nbugs = ["KAFKA-16234"]')
    # an explicit key that the release's other settings cannot take: the validator's message,
    # saying where the values came from
    with pytest.raises(SpecError) as e:
        spec('kafka = "3.6.1"\ntruncation = "high-watermark"')
    assert str(e.value) == (
        'x.toml: model.truncate_on_fetch: needs model.truncation = "leader-epoch-2.1" (the fetch path of '
        "Kafka 2.8+), got 'high-watermark' (the spec writes truncation and kafka = \"3.6.1\" sets the rest)")


def test_an_error_in_the_scenario_is_the_usual_one():
    # a key the release does not set: the validator's message alone
    with pytest.raises(SpecError) as e:
        spec('kafka = "3.7.0"\nmax_disk_failures = "x"')
    assert str(e.value) == "x.toml: model.max_disk_failures: must be an integer, got 'x'"


def test_without_kafka_a_spec_reads_as_before():
    s = spec('truncation = "leader-epoch"')
    assert s.kafka is None and s.config.truncation == LE and not s.config.alter_partition
    with pytest.raises(SpecError, match="model.truncation: missing"):
        spec("")
    with pytest.raises(SpecError, match="model.metadata: only with model.kafka"):
        spec('truncation = "leader-epoch"\nmetadata = "kraft"')


@pytest.mark.parametrize("text, key, message", [
    ('kafka = "3.10.0"', "kafka", "unknown Kafka release '3.10.0': the nearest kmc models are 3.9.x and 4.0.x"),
    ('kafka = "2.9.1"', "kafka", "unknown Kafka release '2.9.1': the nearest kmc models are 2.8.x and 3.0.x"),
    ('kafka = "4.2.0"', "kafka", "unknown Kafka release '4.2.0': the newest release kmc models is 4.1.x"),
    ('kafka = "0.9.0.1"', "kafka", "unknown Kafka release '0.9.0.1': the oldest release kmc models is 0.10.0.x"),
    ('kafka = "3.7"', "kafka", "'3.7' names a line that kmc models as 2 releases (3.7.0, 3.7.1–3.8.x): name the "
                               "patch release, such as 3.7.0 or 3.7.1"),
    ('kafka = "latest"', "kafka", "'latest' is not a Kafka release number such as \"3.6.1\""),
    ('kafka = "03.6.1"', "kafka", "'03.6.1' is not a Kafka release number such as \"3.6.1\""),
    ('kafka = "3.6.1.0"', "kafka", "'3.6.1.0' is not a Kafka release number"),
    ('kafka = "\u0663.6.1"', "kafka", "is not a Kafka release number"),
    ('kafka = ["3.6.1"]', "kafka", "must be a Kafka release as a string"),
    ("kafka = 3.6", "kafka", 'must be a Kafka release as a string, such as "3.6.1", got 3.6'),
    ('kafka = "2.7.0"\nmetadata = "kraft"', "metadata", "Kafka 2.7.0 runs on ZooKeeper only (KRaft came in 2.8)"),
    ('kafka = "4.0.0"\nmetadata = "zookeeper"', "metadata",
     "Kafka 4.0.0 runs on KRaft only (ZooKeeper mode was removed in 4.0)"),
    ('kafka = "3.6.1"\nmetadata = "zk"', "metadata", "must be \"kraft\" or \"zookeeper\", got 'zk'"),
    ('kafka = "3.8.0"\nmetadata = "zookeeper"\neligible_leader_replicas = true', "eligible_leader_replicas",
     "3.8.0 (ZooKeeper) has no eligible leader replicas"),
    ('kafka = "3.6.1"\nmax_disk_failures = 1', "max_disk_failures",
     "3.6.1 (KRaft): KRaft before 3.7 keeps one log directory a broker"),
    ('kafka = "3.9.0"\nmetadata = "zookeeper"\nmax_disk_failures = 1', "max_disk_failures",
     "ZooKeeper mode's handling of a failed log directory is not modelled"),
])
def test_a_release_kmc_does_not_model_is_one_line(text, key, message, tmp_path, capsys):
    with pytest.raises(SpecError) as e:
        spec(text)
    assert e.value.key == f"model.{key}" and message in e.value.detail
    path = tmp_path / "s.toml"
    path.write_text("[model]\nreplicas = 2\n" + text + "\n")
    assert main(["check", str(path), "--no-progress"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: model.{key}: " in err and message in err


def test_kafka_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text('[model]\nreplicas = 2\nmax_messages = 1\nmax_crashes = 1\nkafka = "2.1.0"\n'
                    "max_controlled_shutdowns = 0\n")
    assert main(["check", str(path), "--no-progress", "--no-trace", "--max-states", "5"]) == 0
    out = capsys.readouterr().out
    assert "  kafka       2.1.0 (ZooKeeper)\n" in out and "truncation  leader-epoch-2.1" in out
    assert "alter_partition" not in out
    # --kafka in place of the spec's model.kafka, --metadata with it
    main(["check", str(path), "--kafka", "3.2.0", "--metadata", "kraft", "--no-progress", "--no-trace",
          "--max-states", "5"])
    out = capsys.readouterr().out
    assert "  kafka       3.2.0 (KRaft), from --kafka\n" in out
    assert "alter_partition, truncate_on_fetch, fetch_bugs = [KAFKA-14704]" in out
    # a spec without model.kafka, read as a release: its own keys still win
    assert main(["simulate", "specs/hw-data-loss.toml", "--kafka", "3.6.1", "--runs", "3", "--no-progress",
                 "--no-trace"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(the spec writes truncation and kafka = \"3.6.1\" from --kafka sets the rest)" in err
    # graph reads it too: the spec's leader-epoch rule with 2.7's AlterPartition
    assert main(["graph", str(path), "--out", str(tmp_path / "a.dot")]) == 0
    assert main(["graph", str(path), "--kafka", "2.7.0", "--out", str(tmp_path / "b.dot")]) == 0
    a, b = (tmp_path / "a.dot").read_text(), (tmp_path / "b.dot").read_text()
    assert "AlterPartition" not in a and "AlterPartition" in b
    capsys.readouterr()
    for args, message in (
        (["--kafka", "3.10.0"], "kmc: error: --kafka: unknown Kafka release '3.10.0': the nearest kmc models are"),
        (["--kafka", "2.7.1", "--metadata", "kraft"], "kmc: error: --metadata: Kafka 2.7.1 runs on ZooKeeper only"),
        (["--metadata", "kraft"], "kmc: error: --metadata: only with --kafka"),
    ):
        assert main(["check", str(path), "--no-progress", *args]) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert err.startswith(message) and err.count("\n") == 1, err


# -- the versions matrix reads the same table -------------------------------------------------

# The versions grid's columns as they were defined before they were read from the release table
# (label left out): key -> (rule, hw_requires_min_isr, eligible_leader_replicas), and the three
# side tables. Every cell of these columns and of docs/model.md's configurations must keep its
# configuration exactly.
_OLD_VERSIONS = {
    "hw": (HW, False, False), "le": (LE, False, False), "kip279": (KIP279, False, False),
    "v21": (V21, False, False), "v27": (V21, False, False), "v28": (V21, False, False),
    "v281": (V21, False, False), "v21-gate": (V21, True, False), "v21-gate-ap": (V21, True, False),
    "v21-elr": (V21, True, True), "v21-elr-ap": (V21, True, True), "v41": (V21, True, True),
    "v41-ap": (V21, True, True),
}
_OLD_LKL = ("v41", "v41-ap")
_OLD_AP = {"v27": False, "v28": False, "v281": False, "v21-gate-ap": True, "v21-elr-ap": True, "v41-ap": True}
_OLD_FETCH = {"v28": (B13141, B14704), "v281": (B14704,), "v21-gate-ap": (), "v21-elr-ap": (), "v41-ap": ()}
_OLD_CONFIGS = ("c1", "c2", "c3", "c4", "isr", "lrs", "c3m2_acks", "lrs_acks")


def test_every_existing_cell_keeps_its_configuration():
    from kmc.app.matrix_grids import version_grid
    from kmc.model.config import Config
    from kmc.model.versions import VERSION_CONFIGS, VERSIONS

    grid = {rid: c for rid, c, _ in version_grid()}
    for ck in _OLD_CONFIGS:
        for vk, (rule, gate, elr) in _OLD_VERSIONS.items():
            before = Config(truncation=rule, hw_requires_min_isr=gate, eligible_leader_replicas=elr,
                            last_known_leader=vk in _OLD_LKL, alter_partition=vk in _OLD_AP,
                            broker_epochs=_OLD_AP.get(vk, False), truncate_on_fetch=vk in _OLD_FETCH,
                            fetch_bugs=_OLD_FETCH.get(vk, ()), **VERSION_CONFIGS[ck][1])
            assert grid[f"{ck}-{vk}"] == before, (ck, vk)
            assert grid[f"{ck}-{vk}"].as_dict() == before.as_dict()
    # the old columns keep their labels and order, the new ones come between them
    old = [v for v in VERSIONS if v in _OLD_VERSIONS]
    assert old == list(_OLD_VERSIONS)
    assert [v for v in VERSIONS if v not in _OLD_VERSIONS] == ["v33", "v35", "v370", "v371"]


def test_every_cell_is_its_release_read_as_a_spec():
    # A column is a release of the table with the keys it names over it: the cell's configuration
    # is the one a spec with `kafka = "X.Y.Z"`, those keys and the row's constants reads.
    from kmc.app.matrix_grids import version_grid
    from kmc.model.spec import config_from_table
    from kmc.model.versions import COLUMNS, VERSION_CONFIGS

    cells = version_grid()
    assert len(cells) == 8 * 17 + 9 * 6 + 2 * 4
    for rid, config, _ in cells:
        ck, _, vk = rid.partition("-")
        _, release, metadata, over = COLUMNS[vk]
        table = {k: list(v) if isinstance(v, tuple) else v for k, v in VERSION_CONFIGS[ck][1].items()}
        table.update(kafka=release, **({"metadata": metadata} if metadata else {}), **over)
        assert config_from_table(table, rid) == config, rid


def _cells():
    from kmc.app.matrix_grids import version_grid

    return {rid: c for rid, c, _ in version_grid()}


def test_the_operators_columns_and_rows():
    from kmc.model.versions import OPERATOR_CONFIGS, OPERATOR_VERSIONS, VERSIONS

    cells = _cells()
    # the operators' rows run on the columns from 3.3 on, a failed directory from 3.7 (KRaft's JBOD)
    for ck in OPERATOR_CONFIGS:
        have = [vk for vk in VERSIONS if f"{ck}-{vk}" in cells]
        disk = cells.get(f"{ck}-v41-ap") is not None and cells[f"{ck}-v41-ap"].max_disk_failures
        assert have == ([v for v in OPERATOR_VERSIONS if v not in ("v33", "v35")] if disk else list(OPERATOR_VERSIONS))
    assert OPERATOR_VERSIONS == ("v33", "v35", "v370", "v371", "v21-elr-ap", "v41-ap")

    def shape(c):
        return (c.alter_partition, c.broker_epochs, c.truncate_on_fetch, c.hw_requires_min_isr,
                c.eligible_leader_replicas, c.last_known_leader, c.all_bugs)

    # 3.3–3.4: KIP-841, AlterPartition without broker epochs, no bug of the controlled shutdown
    assert shape(cells["rr2-v33"]) == (True, False, True, False, False, False, ())
    # 3.5.0–3.6.x: broker epochs with KAFKA-15221
    assert shape(cells["rr2crash-v35"]) == (True, True, True, False, False, False, (B15221,))
    # 3.7.0 with ELR: KAFKA-16540 (a min ISR change) and KAFKA-16234 (a failed directory)
    assert shape(cells["disk2-v370"]) == (True, True, True, True, True, False, (B16540, B16234))
    assert shape(cells["minisr3-v370"]) == (True, True, True, True, True, False, (B16540,))
    # 3.7.1–3.8.x with ELR: KAFKA-16540 only
    assert shape(cells["disk3-v371"]) == (True, True, True, True, True, False, (B16540,))
    assert shape(cells["minisr2-v371"]) == (True, True, True, True, True, False, (B16540,))
    # 4.0 with ELR (the KIP-966 column as shipped) and 4.1 as shipped: every fix in
    assert shape(cells["minisr2-v21-elr-ap"]) == (True, True, True, True, True, False, ())
    assert shape(cells["disk2-v41-ap"]) == (True, True, True, True, True, True, ())
    # the rows: 1 or 2 controlled shutdowns, with and without a lossy crash; a min ISR change; a disk
    want = {
        "rr2": (2, 0, 1, False, (), 0), "rr2x2": (2, 0, 2, False, (), 0), "rr2crash": (2, 1, 1, True, (), 0),
        "rr2x2crash": (2, 1, 2, True, (), 0), "minisr2": (2, 1, 0, False, (2, 1), 0), "disk2": (2, 0, 0, False, (), 1),
        "rr3": (3, 0, 1, False, (), 0), "rr3x2": (3, 0, 2, False, (), 0), "rr3crash": (3, 1, 1, True, (), 0), "minisr3": (3, 1, 0, False, (1,), 0), "disk3": (3, 1, 0, False, (), 1),
    }
    assert set(want) == set(OPERATOR_CONFIGS)
    for ck, (n, crashes, shutdowns, lossy, changes, disks) in want.items():
        c = cells[f"{ck}-v41-ap"]
        assert (c.n, c.max_crashes, c.max_controlled_shutdowns, c.unflushed_loss, c.min_isr_changes,
                c.max_disk_failures) == (n, crashes, shutdowns, lossy, changes, disks), ck
        assert (c.min_insync_replicas, c.acks, c.max_messages) == ((1, None, 2) if n == 2 else (2, "all", 1))
    # C1 and C2 on the new columns: no operator, so only the bugs that need nothing more
    assert cells["c2-v35"].bugs == (B15221,) and cells["c2-v33"].all_bugs == ()
    assert cells["c2-v371"].bugs == (B16540,) and cells["c2-v371"].min_isr_changes == ()


def test_the_versions_matrix_refuses_an_empty_grid(tmp_path, capsys):
    assert main(["matrix", "--versions", "--configs", "disk2", "--kafka", "v33,v27", "--out",
                 str(tmp_path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no cell of the grid" in err


def test_a_checkpoint_keeps_the_release_of_kafka(tmp_path, capsys):
    spec_file, ck = tmp_path / "r.toml", tmp_path / "ck"
    spec_file.write_text('[model]\nreplicas = 2\nmax_messages = 1\ntruncation = "leader-epoch-2.1"\n')
    common = ["--no-progress", "--no-trace"]
    assert main(["check", str(spec_file), "--kafka", "2.7.0", "--checkpoint", str(ck), "--max-states", "20",
                 *common]) == 0
    capsys.readouterr()
    assert main(["check", "--resume", str(ck), *common]) == 0  # the release comes from the checkpoint
    out = capsys.readouterr().out
    assert "  kafka       2.7.0 (ZooKeeper), from --kafka\n" in out and "alter_partition" in out
    assert main(["check", "--resume", str(ck), "--kafka", "2.6.0", *common]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "the options differ" in err and "kafka=['2.7.0', None]" in err and err.count("\n") == 1


def test_docs_model_md_s_release_table_is_the_code_s():
    # docs/model.md's table, row by row, against model/releases.py: the releases, the metadata
    # modes (the default first), the truncation rule, the options and the known bugs
    from pathlib import Path

    from kmc.model.releases import ERAS, METADATA_NAMES

    text = (Path(__file__).resolve().parent.parent / "docs" / "model.md").read_text()
    section = text.split("## Kafka by its version number", 1)[1].split("| releases |", 1)[1].split("\n\n", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()[2:]]
    assert len(rows) == len(ERAS)
    options: list[str] = []
    for (releases, modes, rule, on, bugs), era in zip(rows, ERAS):
        assert releases.replace(" – ", "–") == era.name
        assert modes == ", ".join(METADATA_NAMES[m] for m in era.metadata)
        assert rule == f"`{era.truncation}`"
        named = [w.strip("`") for w in on.replace("the above, ", "").split(", ") if w != "—"]
        options = options + named if on.startswith("the above") else named
        assert set(options) == set(era.on), era.name
        shared, _, kraft = bugs.partition("; KRaft also ")
        assert [b for b in shared.split(", ") if b != "—"] == list(era.bugs)
        assert [b for b in kraft.split(", ") if b] == list(era.kraft_bugs)


def test_a_result_names_the_release(tmp_path, capsys):
    import json

    path, out = tmp_path / "s.toml", tmp_path / "r.json"
    path.write_text('[model]\nreplicas = 2\nmax_messages = 1\nkafka = "3.7.1"\neligible_leader_replicas = true\n')
    page = tmp_path / "r.html"
    assert main(["check", str(path), "--no-progress", "--no-trace", "--max-states", "5", "--json", str(out),
                 "--html", str(page)]) == 0
    # the page's header too
    assert ("<dt>kafka</dt><dd>3.7.1 (KRaft); the spec overrides eligible_leader_replicas = true (3.7.1: false)"
            "</dd>") in page.read_text()
    doc = json.loads(out.read_text())
    assert doc["spec"]["kafka"] == {"release": "3.7.1", "metadata": "kraft", "from": "spec",
                                    "overrides": {"eligible_leader_replicas": {"spec": True, "release": False}}}
    assert doc["spec"]["model"]["bugs"] == ["KAFKA-16540"] and doc["spec"]["model"]["eligible_leader_replicas"]
    # a spec without a release: no key, as before
    assert main(["check", "specs/hw-data-loss.toml", "--no-progress", "--no-trace", "--json", str(out),
                 "--force"]) == 1
    assert "kafka" not in json.loads(out.read_text())["spec"]


def test_bench_compares_both_paths_on_the_release(tmp_path, capsys):
    # --compare runs each path in a process of its own: each reads the spec as the release
    path = tmp_path / "b.toml"
    path.write_text('[model]\nreplicas = 2\nmax_messages = 1\nmax_crashes = 1\ntruncation = "leader-epoch-2.1"\n')
    assert main(["bench", str(path), "--compare"]) == 0
    plain = capsys.readouterr().out
    assert main(["bench", str(path), "--kafka", "2.7.0", "--compare"]) == 0
    released = capsys.readouterr().out
    # AlterPartition's requests and answers: more states on both paths than without them
    # (the columns' widths follow the widest figure, a rate that varies with the machine's load)
    assert re.search(r" distinct states +203 +203\n", plain), plain
    assert re.search(r" distinct states +336 +336\n", released), released


# -- the operators' columns on docs/model.md's rows ---------------------------------------------------

# docs/model.md's tables pin each bug on the two-replica configuration C2 (min ISR 1, 2 records, 2
# crashes that may lose the unflushed tail, epochs <= 2, leader-epoch-2.1): (column, the row's own
# keys, distinct states, shortest traces). The column's release decides AlterPartition, broker epochs,
# the eligible leader replicas and the bugs; everything else is the row's.
COLUMN_ROWS = [
    ("v35", {}, 18_550, {"CommittedNeverLost": 7, "LeaderCandidateCompleteness": 6}),  # KAFKA-15221 without ELR
    ("v370", {"min_isr_changes": (2, 1)}, 63_165, {"CommittedNeverLost": 9, "LeaderCandidateCompleteness": 7}),
    ("v370", {"max_disk_failures": 1}, 48_976, {"CommittedNeverLost": 6, "LeaderCandidateCompleteness": 5}),
    ("v371", {"min_isr_changes": (2, 1)}, 63_165, {"CommittedNeverLost": 9, "LeaderCandidateCompleteness": 7}),
    ("v371", {"max_disk_failures": 1}, 43_406, {}),  # KAFKA-16234 fixed in 3.7.1
    ("v21-elr-ap", {"min_isr_changes": (2, 1)}, 54_674, {}),  # 4.0: both fixed
    ("v21-elr-ap", {"max_disk_failures": 1}, 43_406, {}),
]


@pytest.mark.parametrize("column,keys,distinct,want", COLUMN_ROWS,
                         ids=[f"{c}-{next(iter(k), 'plain')}" for c, k, _, _ in COLUMN_ROWS])
def test_the_operators_columns_give_docs_model_md_s_rows(column, keys, distinct, want):
    """Each new column's release, on the row of docs/model.md's tables that pins its bug (or its
    fix), gives that row's distinct states and shortest traces."""
    from kmc.checker.engines import make_engine
    from kmc.checker.core.options import Options
    from kmc.invariants import BY_NAME
    from kmc.model import Config, KafkaModel
    from kmc.model.releases import resolve
    from kmc.model.versions import COLUMNS

    release = resolve(COLUMNS[column][1])
    overrides = COLUMNS[column][3]  # the column's own keys over the release's (the ELR on 3.7 and 4.0)
    settings = {**release.settings(overrides.get("eligible_leader_replicas")), **overrides}
    options = {k: settings[k] for k in ("alter_partition", "broker_epochs", "eligible_leader_replicas")}
    if options["eligible_leader_replicas"]:
        options["hw_requires_min_isr"] = True  # the tables' "ELR": with the HW gate
    needs = {"KAFKA-15221": options["broker_epochs"], "KAFKA-16540": "min_isr_changes" in keys,
             "KAFKA-16234": "max_disk_failures" in keys}
    cfg = Config(replicas=("A", "B"), truncation="leader-epoch-2.1", max_leader_epoch=2, max_messages=2,
                 max_crashes=2, unflushed_loss=True, min_insync_replicas=1, **options, **keys,
                 bugs=tuple(b for b in release.bugs if needs.get(b)))
    model = KafkaModel(cfg)
    props = [BY_NAME[p] for p in ("CommittedNeverLost", "LogsNeverDiverge", "LeaderCandidateCompleteness")]
    result = make_engine(model, props, Options(keep_going=True)).run()
    assert result.stats.distinct == distinct
    assert {p: len(v.path) for p, v in result.violations.items()} == want
