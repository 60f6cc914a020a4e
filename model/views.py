"""What the Kafka model's satellite modules read of the model and of its batch kernel.

The step descriptions (``model.describe_*``), the guards in words (``model.guards_*``), the
coverage kinds and values (``model.coverage_*``), the fair instances (``model.fairness``) and
the batch kernel's elections and operators' actions (``model.batch_actions``,
``model.batch_operators``)
are called by the model (``model.kafka.KafkaModel``) and its batch kernel
(``model.batch.KafkaBatchKernel``); they read a few of their members, named here, so that
they import neither and the model's modules import one another one way only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from .config import Config
from .rows import RowCodec
from .state import Record


class ModelView(Protocol):
    """What is read of the Kafka model: its configuration, a replica's name and how it
    writes a record."""

    @property
    def config(self) -> Config: ...

    def name(self, r: int | None) -> str: ...

    def format_record(self, record: Record) -> str: ...


class KernelView(Protocol):
    """What is read of the Kafka model's batch kernel: its configuration, its rows' layout,
    its action names (the codes are their positions), the replicas and who leads a row."""

    @property
    def config(self) -> Config: ...
    @property
    def codec(self) -> RowCodec: ...
    @property
    def action_names(self) -> Sequence[str]: ...
    @property
    def n(self) -> int: ...

    def leads(self, rows: np.ndarray) -> np.ndarray: ...


class Groups(Protocol):
    """What the batch kernel's elections and operators' actions read and write of the
    successor groups of one ``expand`` call (``model.batch.SuccessorGroups``): who leads
    each row, which replicas are alive, and ``emit`` to record a group."""

    @property
    def lead(self) -> np.ndarray: ...
    @property
    def alive(self) -> np.ndarray: ...

    def emit(self, code: int, mask: np.ndarray, effect: Callable[..., None], *args: object) -> None: ...
