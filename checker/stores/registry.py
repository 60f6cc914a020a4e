"""The stores a rows search may keep its seen states in, by name: the one place their names
are written (the spec's ``check.store``, the CLI's ``--store`` and ``Options.store`` read it).

A store is made by a factory called with the directory the user gave for it (``--store-dir``,
or ``None``) and the checkpoint directory (or ``None``); it returns a ``Store``
(``checker.core.parts``). A new store is one module with its class, plus one line here (or
one ``register_store`` call) naming its factory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ..base.errors import EngineError, UsageError

if TYPE_CHECKING:  # for the annotations only: the stores are imported when one is made
    from ..core.parts import Store

Where = str | Path | None
StoreFactory = Callable[[Where, Where], "Store"]


def memory_store(store_dir: Where, checkpoint_dir: Where) -> Store:
    """The states in memory (``checker.stores.seen.CompactSeenSet``)."""
    from .seen import CompactSeenSet

    return CompactSeenSet()


def disk_store(store_dir: Where, checkpoint_dir: Where) -> Store:
    """The states in files (``checker.stores.disk.DiskStore``): its directory in ``store_dir``,
    else in the checkpoint directory, else the temporary directory; the stores that killed
    runs left there are removed first."""
    from .disk import DiskStore, remove_stale

    parent = store_dir if store_dir is not None else checkpoint_dir
    if parent is not None:
        remove_stale(parent)
    return DiskStore(parent, checkpoint_dir)


STORES: Final[dict[str, StoreFactory]] = {"memory": memory_store, "disk": disk_store}


def register_store(name: str, factory: StoreFactory) -> None:
    """Add the store ``name``; a name already taken is refused (never replaced silently)."""
    if name in STORES:
        raise UsageError(f"store {name!r} is registered already")
    STORES[name] = factory


def new_store(kind: str, store_dir: Where = None, checkpoint_dir: Where = None) -> Store:
    """A new store ``kind`` of a rows search (see the module)."""
    factory = STORES.get(kind)
    if factory is None:
        raise EngineError(f"unknown store {kind!r} (known: {', '.join(STORES)})")
    return factory(store_dir, checkpoint_dir)
