"""Help without Markdown: two of Rich's modules that typer's help imports and nvtopo never uses.

typer formats help and usage errors in ``typer.rich_utils``, which imports
``rich.markdown`` (and with it ``markdown_it``: 62 modules) for commands whose help is
Markdown (``rich_markup_mode="markdown"``: nvtopo's is Rich markup) and ``rich.traceback``
(with ``rich.syntax`` and ``pygments``) for pretty tracebacks (off:
``pretty_exceptions_enable=False``).  Together about a third of ``nvtopo --help``'s start-up.

:func:`defer` puts a stand-in under each name, whose class (``Markdown``, ``Traceback``)
imports the real module the first time it is used (made, asked for an attribute, or an
``isinstance`` test), and whose other names do the same; the help printed is the same.
Nothing nvtopo does uses either (``tests/test_cli.py`` holds the help screens).
"""

import importlib
import sys
import types
from typing import Any, Dict, Tuple

#: module -> the class typer's help imports from it by name
DEFERRED: Dict[str, str] = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}


def _real(module: str) -> types.ModuleType:
    """The real module, imported now (the stand-in taken out of the way first)."""
    if isinstance(sys.modules.get(module), _StandIn):
        del sys.modules[module]
    return importlib.import_module(module)


class _StandIn(types.ModuleType):
    """Stands for a module until a name other than its deferred class is asked of it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(_real(self.__name__), name)


class _Deferred(type):
    """The metaclass of a stand-in class: making one, asking it an attribute or testing an
    instance against it is done by the real class."""

    _where: Tuple[str, str]

    def _target(cls) -> Any:
        module, name = cls._where
        return getattr(_real(module), name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._target()(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") or name == "_where":
            raise AttributeError(name)
        return getattr(cls._target(), name)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls._target())


def defer() -> None:
    """Stand-ins for :data:`DEFERRED` not yet imported (a second call changes nothing).

    ``rich`` itself is not imported here (``check --format json`` never loads it), so the
    stand-ins are found by ``from rich.markdown import Markdown`` and ``importlib``, which
    is how typer and Rich import them; where ``rich`` is loaded already its attribute is set
    too."""
    for module, cls_name in DEFERRED.items():
        if module in sys.modules:
            continue
        stand = _StandIn(module)
        stand.__dict__[cls_name] = _Deferred(cls_name, (), {"_where": (module, cls_name)})
        sys.modules[module] = stand
        package = sys.modules.get("rich")
        if package is not None:
            setattr(package, module.rpartition(".")[2], stand)


__all__ = ["DEFERRED", "defer"]
