"""Hadoop's ``.crc`` side files, checked in Python.

Spark saves a level (``saveAsPickleFile``) through Hadoop's local file system, which
writes ``.NAME.crc`` beside every file ``NAME``: the bytes ``crc\\0``, the number of
bytes per checksum (a big-endian int32), then one big-endian CRC-32 per chunk of that
many bytes. Hadoop verifies it on read; a damaged side file then fails the job with a
JVM stack trace per attempt, so kmc checks it first.
"""

from __future__ import annotations

import zlib

_MAGIC = b"crc\0"


def hadoop_crc_matches(data_path, crc_path) -> bool:
    """True when ``crc_path`` is a well-formed Hadoop checksum file of ``data_path``."""
    try:
        with open(crc_path, "rb") as c:
            head = c.read(8)
            if len(head) != 8 or head[:4] != _MAGIC:
                return False
            per = int.from_bytes(head[4:], "big")
            if not 0 < per <= 1 << 24:
                return False
            with open(data_path, "rb") as d:
                while True:
                    chunk = d.read(per)
                    want = c.read(4)
                    if not chunk:
                        return want == b""
                    if len(want) != 4 or int.from_bytes(want, "big") != zlib.crc32(chunk):
                        return False
    except OSError:
        return False
