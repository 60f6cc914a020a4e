"""State fingerprints: a stable 64-bit digest of a model's canonical state encoding.

The one place that defines a state's identity for every engine. It must not depend on
the process (Python's ``hash()`` of strings changes with ``PYTHONHASHSEED``), because the
Spark engine partitions states by fingerprint across executors and every engine must
count the same distinct states.

Known limitation: two distinct states with the same 64-bit digest would be counted as
one (a missed state). With n states the chance of any such collision is about
n^2 / 2^65: around 3e-8 for a million states.
"""

from hashlib import blake2b

DIGEST_BYTES = 8


def fingerprint_bytes(data: bytes) -> int:
    """The 64-bit fingerprint (an unsigned int) of a canonical encoding."""
    return int.from_bytes(blake2b(data, digest_size=DIGEST_BYTES).digest(), "big")


def fingerprint(model, state) -> int:
    """The 64-bit fingerprint of ``state`` under ``model``'s canonical encoding."""
    return int.from_bytes(blake2b(model.encode(state), digest_size=DIGEST_BYTES).digest(), "big")
