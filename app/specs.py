"""Spec files as the application reads them: the model's spec (``model.spec``) with the
application's own table, ``[spark]``, the Spark engine's settings (the model reads none):

    [spark]                       # optional
    master = "local[*]"           # a Spark master URL (checker.base.units.validate_master)
    partitions = 4

Every error is the model's spec errors' kind: a one-line ``SpecError`` naming the file and
the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from kmc.checker.base.errors import EngineError, SpecError
from kmc.checker.base.units import validate_master
from kmc.model import spec as model_spec

if TYPE_CHECKING:  # for the annotations only
    from kmc.model.spec_model import KafkaArg

    from .user_model import ModelSpec

SPARK_KEYS = ("master", "partitions")
PARTITIONS = (1, 4096)  # checker.spark.master.MAX_PARTITIONS


@attrs.frozen
class SparkTable:
    """A spec's ``[spark]`` table: the master URL and the partition count (``None``: not
    set, the command line or the engine's default decides)."""

    master: str | None = None
    partitions: int | None = None


def read_spark(path: str, table: dict[str, Any]) -> SparkTable:
    """The ``[spark]`` table of the spec file ``path``, checked.

    Raises:
        SpecError: an unknown key, an empty or malformed master, partitions out of range.
    """
    model_spec.check_keys(path, "spark.", table, SPARK_KEYS)
    master = table.get("master")
    if master is not None:
        master = model_spec.check_text(path, "spark.master", master)
        if not master:
            raise SpecError(path, "spark.master", "must not be empty")
        try:
            validate_master(master)
        except EngineError as e:
            raise SpecError(path, "spark.master", str(e)) from None
    partitions = model_spec.check_int(path, "spark.partitions", table.get("partitions"), *PARTITIONS)
    return SparkTable(master, partitions)


TABLES = {"spark": read_spark}  # the application's tables of a spec file, in file order


def load_spec(path: str | Path, kafka: KafkaArg | None = None) -> model_spec.Spec:
    """A spec file with the application's tables (``model.spec.load_spec``; ``kafka``: a
    release from the command line, in place of the spec's ``model.kafka``)."""
    return model_spec.load_spec(path, TABLES, kafka)


def parse_spec(data: bytes, path: str = "<spec>") -> model_spec.Spec:
    """The bytes of a spec file with the application's tables (``model.spec.parse_spec``)."""
    return model_spec.parse_spec(data, path, TABLES)


def spark_table(spec: model_spec.Spec | ModelSpec) -> SparkTable:
    """The ``[spark]`` settings of a spec (those of a user's model: none)."""
    table: SparkTable = spec.tables.get("spark", SparkTable())
    return table
