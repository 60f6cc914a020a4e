"""Writing an output file whole: the bytes go to a temporary file next to the destination,
which is then renamed over it, so that a full disk or an interrupted write leaves the old
file (or no file) in place, never half a file.

The rename replaces the directory entry at the destination: a symbolic link there is
replaced by the file, never followed (a link that appeared at the path while kmc searched
does not make kmc write over the file it names).

With ``exclusive``, the destination must not exist when the file is put there: the
temporary file is hard-linked to the destination's name, which fails if anything of that
name (a file, a link) appeared meanwhile (a user's file created while kmc searched is
never replaced).
"""

from __future__ import annotations

import errno
import os
import tempfile


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_file(path: str | os.PathLike[str], data: bytes, *, exclusive: bool = False, sync: bool = False) -> None:
    """Write ``data`` to ``path`` through a temporary file renamed over it.

    A symbolic link at ``path`` is replaced by the file, never followed. A destination
    that exists but is not a regular file (``/dev/stdout``, a named pipe) is written to
    directly: renaming over it would replace the device with a plain file.

    Args:
        path: the destination.
        data: its whole contents.
        exclusive: fail (``FileExistsError``) rather than replace a file at ``path``.
        sync: flush the data to the disk before the rename.

    Raises:
        OSError: the folder is missing or not writable, the write fails (the temporary
            file is removed), or ``exclusive`` and a file is there.
    """
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        if exclusive:
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path)
        with open(path, "wb") as out:
            out.write(data)
        return
    path = os.path.abspath(path)
    fd, tmp = tempfile.mkstemp(prefix=".kmc-", suffix=".tmp", dir=os.path.dirname(path))
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; give it a normal file's mode
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if sync:
                out.flush()
                os.fsync(out.fileno())
        if exclusive:
            _put_new(tmp, path)
        else:
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _put_new(tmp: str, path: str | os.PathLike[str]) -> None:
    """Give ``tmp`` the name ``path``, which must not exist; ``tmp`` is gone after."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, "a file of that name appeared meanwhile; it is left as it is") from None
    except OSError:
        # A file system without hard links: claim the name, then rename over the claim
        # (only an empty file kmc just created is ever replaced).
        claim = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        os.close(claim)
        os.replace(tmp, path)
        return
    os.unlink(tmp)
