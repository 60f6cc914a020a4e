"""A model or a kernel given the defaults of the optional members its class leaves out
(``ModelDefaults``, ``KernelDefaults``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def _declared(cls: type, name: str) -> bool:
    """Whether a class (or one of its bases) declares the member ``name``: its
    declaration read once, never an attribute looked up on an object."""
    return any(name in vars(k) for k in cls.__mro__ if k is not object)


class Adapted:
    """A model or a kernel given the defaults of the members its class leaves out: the
    members it declares are bound once, here; everything else it holds (the attributes
    its properties read) is its own. The original is ``__wrapped__``."""

    def __init__(self, inner: Any, members: Iterable[str]) -> None:
        self.__wrapped__ = inner
        for name in members:
            if _declared(type(inner), name):
                self.__dict__[name] = getattr(inner, name)

    def __getattr__(self, name: str) -> Any:
        if "__wrapped__" not in self.__dict__:  # while unpickling
            raise AttributeError(name)
        return getattr(self.__wrapped__, name)

    def __repr__(self) -> str:
        return repr(self.__wrapped__)
