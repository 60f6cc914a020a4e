"""A ``--store disk`` checkpoint damaged on disk: every file of its store and its frontier
queue (``fp-*.u64``, ``pc-*.bin``, ``q-*.rows``) has its size and SHA-256 in the
checkpoint, and ``--resume`` refuses a file that differs, is missing or is a link, and a
level directory that is a link or belongs to another run, in one line naming the
checkpoint and the file, exit 2 (never a resumed run with wrong counts, never a traceback).

One checkpoint (hw-unclean stopped by ``--max-states`` at depth 12) is written once; each
case damages a copy of it.
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import attrs
import pytest

from kmc.app.cli import main
from kmc.checker.checkpoints import file as checkpoint

import pins
from test_checkpoint import SPECS
from test_checkpoint_schema import PickledAs

HW_UNCLEAN = SPECS / "hw-unclean.toml"


def _write(directory: Path, *extra: str) -> Path:
    code = main(["check", str(HW_UNCLEAN), "--store", "disk", "--checkpoint", str(directory), "--checkpoint-every", "0",
                 "--max-states", "3000", "--no-progress", "--no-trace", *extra])
    assert code == 1  # hw-unclean: two properties are violated by then
    return directory


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The checkpoint to damage, and one of another run (with --per-state: its frontier
    file holds pickled blocks of states)."""
    root = tmp_path_factory.mktemp("damaged")
    return _write(root / "ck"), _write(root / "other", "--per-state")


def _level(ck: Path) -> Path:
    (level,) = ck.glob("level-*")
    return level


def _biggest(level: Path, pattern: str) -> Path:
    return max(sorted(level.glob(pattern)), key=lambda p: p.stat().st_size)


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    at = len(data) // 2
    data[at : at + 8] = bytes(b ^ 0xFF for b in data[at : at + 8])
    path.write_bytes(bytes(data))


def _zero(path: Path) -> None:
    data = bytearray(path.read_bytes())
    at = len(data) // 4
    data[at : at + len(data) // 2] = bytes(len(data) // 2)
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _delete(path: Path) -> None:
    path.unlink()


def _symlink(path: Path) -> None:
    """The file replaced by a link to a copy of itself (same bytes: the link is the fault)."""
    copy = path.parent.parent / f"copy-{path.name}"
    shutil.copyfile(path, copy)
    path.unlink()
    path.symlink_to(copy)


FILE_DAMAGE = {"flip-8-bytes": _flip, "zero-a-run": _zero, "truncate": _truncate, "empty": _empty,
               "delete": _delete, "symlink": _symlink}
FILES = {"fingerprints": "fp-*.u64", "parents": "pc-*.bin", "frontier": "q-*.rows"}


def _resume(ck: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["check", "--resume", str(ck), "--no-progress", "--no-trace"])
    _, err = capsys.readouterr()
    return code, err


def _refused(ck: Path, capsys, *words: str) -> str:
    code, err = _resume(ck, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"kmc: error: {ck}:") and "start a new run" in lines[0], err
    for word in words:
        assert word in lines[0], err
    return lines[0]


def _copy(saved, tmp_path) -> Path:
    ck = tmp_path / "ck"
    shutil.copytree(saved[0], ck, symlinks=True)
    return ck


def test_the_intact_copy_resumes_to_the_pinned_counts(saved, tmp_path, capsys):
    ck = _copy(saved, tmp_path)
    capsys.readouterr()
    code = main(["check", "--resume", str(ck), "--no-progress", "--no-trace", "--json", str(tmp_path / "r.json")])
    assert code == 1
    stats = json.loads((tmp_path / "r.json").read_text())["stats"]
    pin = pins.PINS["hw-unclean"]
    assert (stats["distinct_states"], stats["states_generated"], stats["depth"]) == (pin.distinct, pin.generated,
                                                                                     pin.depth)
    # --resume says where it goes on from: the checkpoint's depth, and the level expanded again
    # (the counts of the run stopped at --max-states 3000: 3,541 states through depth 12, 792 of them at 12)
    err = capsys.readouterr().err
    assert f"kmc: resuming {ck} at depth 12 (3,541 distinct states, 7,035 generated); the 792 states of that level " \
        "are expanded from the start" in err, err
    assert sum(stats["levels"][:12]) == 3541 and stats["levels"][11] == 792  # the same counts, by the finished run
    main(["check", "--resume", str(ck), "--no-progress", "--no-trace"])  # its final checkpoint: a finished search
    assert f"kmc: resuming {ck} at depth 21 (5,548 distinct states, 12,276 generated); its search was complete" \
        in capsys.readouterr().err


@pytest.mark.parametrize("damage", sorted(FILE_DAMAGE))
@pytest.mark.parametrize("kind", sorted(FILES))
def test_a_damaged_store_or_queue_file_is_refused_in_one_line(saved, tmp_path, capsys, kind, damage):
    ck = _copy(saved, tmp_path)
    victim = _biggest(_level(ck), FILES[kind])
    FILE_DAMAGE[damage](victim)
    _refused(ck, capsys, f"{victim.parent.name}/{victim.name}")


def test_two_buckets_swapped_are_refused(saved, tmp_path, capsys):
    ck = _copy(saved, tmp_path)
    level = _level(ck)
    a, b = sorted(level.glob("fp-00-*"))[0], sorted(level.glob("fp-01-*"))[0]
    a_bytes, b_bytes = a.read_bytes(), b.read_bytes()
    a.write_bytes(b_bytes)
    b.write_bytes(a_bytes)
    _refused(ck, capsys, "fp-0")


def test_a_valid_frontier_row_replaced_by_another_is_refused(saved, tmp_path, capsys):
    ck = _copy(saved, tmp_path)
    (queue,) = _level(ck).glob("q-*.rows")
    header, snapshot = checkpoint.read(ck)
    row = snapshot["queue"].layout.encode(next(snapshot["queue"].blocks(ck))[:1]).nbytes
    data = bytearray(queue.read_bytes())
    assert len(data) == row * snapshot["queue"].count
    data[row : 2 * row] = data[:row]  # the second row becomes a copy of the first: a valid row
    queue.write_bytes(bytes(data))
    _refused(ck, capsys, queue.name, "checksum mismatch")


def test_the_per_state_frontier_s_pickled_blocks_are_checked_before_any_is_loaded(saved, tmp_path, capsys):
    ck = tmp_path / "other"
    shutil.copytree(saved[1], ck)
    (queue,) = _level(ck).glob("q-*.rows")
    _flip(queue)
    _refused(ck, capsys, queue.name)


def test_a_level_directory_that_is_a_link_to_another_run_s_is_refused(saved, tmp_path, capsys):
    ck = _copy(saved, tmp_path)
    level = _level(ck)
    shutil.rmtree(level)
    level.symlink_to(_level(saved[1]), target_is_directory=True)
    _refused(ck, capsys, level.name, "symbolic link")


def test_a_level_directory_that_is_a_link_to_its_own_copy_is_refused(saved, tmp_path, capsys):
    ck = _copy(saved, tmp_path)
    level = _level(ck)
    moved = tmp_path / "elsewhere"
    level.rename(moved)
    level.symlink_to(moved, target_is_directory=True)
    _refused(ck, capsys, level.name, "symbolic link")


def test_another_run_s_level_directory_in_its_place_is_refused(saved, tmp_path, capsys):
    ck = _copy(saved, tmp_path)
    level = _level(ck)
    shutil.rmtree(level)
    shutil.copytree(_level(saved[1]), level)
    _refused(ck, capsys, level.name)


def test_a_level_directory_the_manifest_does_not_list_is_refused(saved, tmp_path, capsys):
    ck = _copy(saved, tmp_path)
    checkpoint.write_manifest(ck, [])
    _refused(ck, capsys, _level(ck).name, "not created by this checkpoint")


def test_a_missing_level_directory_is_refused(saved, tmp_path, capsys):
    ck = _copy(saved, tmp_path)
    shutil.rmtree(_level(ck))
    _refused(ck, capsys, "missing")


@pytest.mark.parametrize("part", ["seen", "queue"])
@pytest.mark.parametrize("shape", ["recorded none", "no such field"])
def test_a_checkpoint_without_the_files_checksums_is_refused_as_older(saved, tmp_path, capsys, part, shape):
    """A checkpoint written before the store's and the queue's files had checksums cannot be
    verified: it is refused in one line saying so (docs/long-runs.md), whether its part
    recorded none or its class had no such field yet."""
    ck = _copy(saved, tmp_path)
    header, snapshot = checkpoint.read(ck)
    assert snapshot[part].files  # a disk part of this kmc records them
    if shape == "recorded none":
        old = pickle.loads(pickle.dumps(snapshot[part]))
        object.__setattr__(old, "files", None)
    else:
        fields = {f.name: getattr(snapshot[part], f.name) for f in attrs.fields(type(snapshot[part]))}
        old = PickledAs(type(snapshot[part]), {k: v for k, v in fields.items() if k != "files"})
        unpickled = pickle.loads(pickle.dumps(old))
        assert type(unpickled) is type(snapshot[part]) and not hasattr(unpickled, "files")
    snapshot[part] = old
    run = {k: header[k] for k in ("kmc_version", "spec_sha256", "spec_path", "properties", "options", "limits", "store")
           if k in header}
    checkpoint.write(ck, run, snapshot)
    _refused(ck, capsys, "did not record the size and SHA-256")


# -- a checkpoint on a full disk other than the store's -------------------------------------------

@pytest.fixture
def full_checkpoint_disk(tmp_path, monkeypatch):
    """A checkpoint directory on a disk of 200 KiB, the store's on another: a tmpfs when
    this process may mount one (root), else every write into the directory past 200 KiB
    fails with ENOSPC (the level files' copies across file systems, the checkpoint file)."""
    import errno
    import os
    import subprocess

    disk = tmp_path / "small"
    disk.mkdir()
    mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)],
                                                   capture_output=True).returncode == 0
    if not mounted:
        from kmc.checker.checkpoints import file as module
        from kmc.checker.stores import disk_files as disk_store

        budget = [200 * 1024]

        def spend(n, where):
            budget[0] -= n
            if budget[0] < 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(where))

        real_link, real_write = disk_store.link, module.write

        def link(source, target):  # (across file systems: a copy)
            if str(target).startswith(str(disk)):
                spend(os.path.getsize(source), target)
                shutil.copyfile(source, target)
                return
            real_link(source, target)

        def write(directory, run, snapshot):
            spend(len(pickle.dumps(snapshot)), directory)
            return real_write(directory, run, snapshot)

        monkeypatch.setattr(disk_store, "link", link)
        monkeypatch.setattr(module, "write", write)
        from kmc.checker.checkpoints import writer as checkpointer

        monkeypatch.setattr(checkpointer, "write", write)
    yield disk
    if mounted:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_checkpoint_on_a_full_disk_is_the_disk_full_stop_and_resumes(full_checkpoint_disk, tmp_path, capsys):
    ck = full_checkpoint_disk / "ck"
    capsys.readouterr()
    code = main(["check", str(HW_UNCLEAN), "--store", "disk", "--store-dir", str(tmp_path / "store"), "--checkpoint",
                 str(ck), "--checkpoint-every", "0", "--no-progress", "--no-trace", "--json", str(tmp_path / "a.json")])
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    assert code == 1, err  # hw-unclean: two violations found before the stop are definite answers (else 4)
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["stopped"] == "disk-full" and doc["complete"] is False
    lines = [line for line in err.splitlines() if line.startswith("kmc: ")]
    assert lines[0].startswith(f"kmc: stopped: the checkpoint directory {ck} is full") and "the search was not complete" \
        in lines[0], err
    assert f"continue with: kmc check --resume {ck}" in lines[1], err
    # the last checkpoint written stands: copied to a disk with room, it resumes to the full counts
    roomy = tmp_path / "roomy"
    shutil.copytree(ck, roomy)
    code = main(["check", "--resume", str(roomy), "--no-progress", "--no-trace", "--json", str(tmp_path / "r.json")])
    assert code == 1
    stats = json.loads((tmp_path / "r.json").read_text())["stats"]
    pin = pins.PINS["hw-unclean"]
    assert (stats["distinct_states"], stats["states_generated"], stats["depth"]) == (pin.distinct, pin.generated,
                                                                                     pin.depth)


def test_a_full_checkpoint_disk_without_violations_exits_4(full_checkpoint_disk, tmp_path, capsys):
    ck = full_checkpoint_disk / "ck"
    code = main(["check", str(SPECS / "le-three-replicas.toml"), "--store", "disk", "--store-dir",
                 str(tmp_path / "store"), "--checkpoint", str(ck), "--checkpoint-every", "0", "--no-progress"])
    _, err = capsys.readouterr()
    assert code == 4 and "Traceback" not in err, err
    assert f"kmc: stopped: the checkpoint directory {ck} is full" in err


def test_a_spark_level_directory_that_is_a_link_is_refused(tmp_path):
    """The Spark engine's saved level (its files' sizes and SHA-256 are checked already):
    a link in its place, even to an intact copy, is refused as the disk store's is."""
    from kmc.checker.checkpoints.file import CheckpointError
    from kmc.checker.partitioned.save import verify_saved
    from kmc.checker.partitioned.digests import digests

    ck = tmp_path / "ck"
    level = ck / "level-000003"
    level.mkdir(parents=True)
    (level / "run-0000-000003.npy").write_bytes(b"\x93NUMPY states")
    snapshot = {"data": level.name, "files": digests(sorted(level.iterdir()))}
    assert verify_saved(snapshot, ck) == level.resolve()
    moved = tmp_path / "elsewhere"
    level.rename(moved)
    level.symlink_to(moved, target_is_directory=True)
    with pytest.raises(CheckpointError, match="a symbolic link, not the level directory the checkpoint saved"):
        verify_saved(snapshot, ck)
