"""The pickler of the per-state Spark engine's frontier chunks and successor blobs."""

from __future__ import annotations

import io
import operator
import pickle

import attrs


class _Pickler(pickle.Pickler):
    """A pickler that writes plain attrs instances as a call of their class.

    attrs pickles a slotted frozen instance through ``__getstate__``/``__setstate__``
    written in Python, which makes pickling the frontier and the successors cost more
    than generating them. An instance of a class whose fields are all positional
    ``__init__`` arguments without converters is rebuilt equal by calling the class
    with its field values, which pickle does in C. Anything else is pickled as usual.
    """

    def __init__(self, file):
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self._getters: dict = {}

    def reducer_override(self, obj):
        cls = obj.__class__
        try:
            getter = self._getters[cls]
        except KeyError:
            getter = self._getters[cls] = _fields_getter(cls)
        if getter is None:
            return NotImplemented
        return cls, getter(obj)


def _fields_getter(cls):
    if not isinstance(cls, type) or not attrs.has(cls):
        return None
    fields = attrs.fields(cls)
    if not fields or not all(f.init and f.converter is None and not f.kw_only for f in fields):
        return None
    if len(fields) == 1:
        name = fields[0].name
        return lambda obj: (getattr(obj, name),)
    return operator.attrgetter(*(f.name for f in fields))


def dumps(obj) -> bytes:
    """``obj`` pickled with ``_Pickler`` (read back with ``pickle.loads``)."""
    buffer = io.BytesIO()
    _Pickler(buffer).dump(obj)
    return buffer.getvalue()
