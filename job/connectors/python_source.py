"""Python data sources (``pyspark.sql.datasource``) that connectors define: their classes
are made on first use.

The classes subclass pyspark's, so defining them imports pyspark, which validating a
pipeline or a --dry-run must not do. Spark's Python workers unpickle them by reference
(module and name); the module's ``__getattr__`` makes them there the same way.
"""
from __future__ import annotations

from typing import Callable, Iterable


class LazyClasses:
    """The classes ``define()`` returns, made on first use and published under ``module``.

    In the module that defines them::

        CLASSES = LazyClasses(__name__, ("MyPartition", "MyReader", "MySource"), _define)
        __getattr__ = CLASSES.module_getattr
    """

    def __init__(self, module: str, names: tuple[str, ...], define: Callable[[], Iterable[type]]) -> None:
        self.module, self.names, self.define = module, names, define
        self._classes: dict[str, type] = {}

    def __getitem__(self, name: str) -> type:
        if not self._classes:
            for cls in self.define():
                cls.__module__ = self.module
                cls.__qualname__ = cls.__name__
                self._classes[cls.__name__] = cls
        return self._classes[name]

    def module_getattr(self, name: str) -> type:
        if name in self.names:
            return self[name]
        raise AttributeError(f"module {self.module!r} has no attribute {name!r}")
