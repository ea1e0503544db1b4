"""Keep pyarrow from importing pandas until the program imports it (a third of ``import engine`` +
``connect()`` + the first query went to it).

pyarrow imports pandas the first time it converts any Python list (``pa.array([...])``), only to ask
whether the list is a pandas object, and remembers the answer. No pandas object can exist before pandas
is imported, so importing this module, while pandas is not imported yet, has that first question answered
"no pandas" (the import is refused for that one call) and watches for pandas: when anything imports it
later, pyarrow is told at once (``_pandas_api.pd`` loads its pandas integration), so every pandas object
is recognised as before. pyarrow's explicit pandas calls (``to_pandas``, ``Table.from_pandas``) import
pandas themselves whenever they are used.

Imported first by :mod:`engine.session` and :mod:`engine.exec` (what a Ray leaf imports); it does
nothing when pandas is already imported.
"""
from __future__ import annotations

import importlib.machinery
import sys

import pyarrow as pa
import pyarrow.lib


class _RefusePandas:
    """A meta path finder that refuses ``import pandas`` (held only around one ``pa.array`` call)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            raise ImportError("pandas: deferred until the program imports it")
        return None


class _TellPyarrowOfPandas:
    """A meta path finder that finds pandas as the path finder does, and once pandas is executed,
    has pyarrow load its pandas integration (then steps aside)."""

    def find_spec(self, name, path=None, target=None):
        if name != "pandas":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None       # found some other way: pyarrow's explicit pandas calls still load it
        exec_module = spec.loader.exec_module

        def exec_then_tell_pyarrow(module):
            exec_module(module)
            pyarrow.lib._pandas_api.pd                  # noqa: B018 - loads pyarrow's pandas integration

        spec.loader.exec_module = exec_then_tell_pyarrow
        return spec


def _defer() -> None:
    if "pandas" in sys.modules or not hasattr(pyarrow.lib, "_pandas_api"):
        return
    refuse = _RefusePandas()
    sys.meta_path.insert(0, refuse)
    try:
        pa.array([])          # pyarrow's one question: "is pandas there?" — answered no
    finally:
        sys.meta_path.remove(refuse)
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _TellPyarrowOfPandas())


_defer()
