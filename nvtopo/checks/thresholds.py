"""``--thresholds FILE``: error-counter thresholds per node class, read strictly.

The file (docs/checks.md, docs/schemas/thresholds.schema.json)::

    {"schema_version": 1,
     "classes": {"*": {"ib": {"symbol_error": 50}},
                 "dgx-h100": {"nvlink": {"replay": 500}}}}

A node's class is the layout it is checked against; ``"*"`` is every node.  What the file
gives is applied by :func:`nvtopo.checks.run` for the one run
(:func:`nvtopo.checks.catalog.using_thresholds`), above the catalog's defaults and the
layout's ``error_thresholds``.  Any other key, family, counter or value is an
:class:`~nvtopo.errors.NvtopoError` naming the file and the key.
"""

from __future__ import annotations

import json
from ..plain import plain
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..errors import NvtopoError
from . import catalog

#: Version of the thresholds file format.
SCHEMA_VERSION = 1
#: Every node class.
ANY_CLASS = "*"
#: The largest file read (a thresholds file is a few hundred bytes).
MAX_BYTES = 1 << 20
#: The largest threshold: counters are at most 64 bits.
MAX_VALUE = (1 << 64) - 1

Table = Mapping[str, Mapping[str, int]]


@plain(frozen=True)
class Thresholds:
    """``classes``: node class -> family (``nvlink``, ``ib``) -> counter -> threshold."""

    path: str
    classes: Mapping[str, Table]

    def for_class(self, name: Optional[str]) -> Dict[str, Dict[str, int]]:
        """The thresholds for a node checked against layout ``name``: ``"*"``, then its own."""
        out: Dict[str, Dict[str, int]] = {}
        for cls in (ANY_CLASS, name):
            if cls is None:
                continue
            for family, table in self.classes.get(cls, {}).items():
                out.setdefault(family, {}).update(table)
        return out


def _pairs(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"key {k!r} given twice")
        out[k] = v
    return out


def _family(path: str, where: str, family: str, table: Any) -> Dict[str, int]:
    known = catalog.CATALOG[catalog.THRESHOLD_CODES[family]].thresholds
    if not isinstance(table, dict):
        raise NvtopoError(f"{where}: must map counter names to thresholds", where=path)
    out: Dict[str, int] = {}
    for counter, value in table.items():
        key = f"{where}.{counter}"
        if counter not in known:
            raise NvtopoError(f"{key}: {family} counts no {counter!r} (it counts "
                              f"{', '.join(known)})", where=path)
        if isinstance(value, bool) or not isinstance(value, int) or \
                not 0 <= value <= MAX_VALUE:
            raise NvtopoError(f"{key}: must be a whole number from 0 to 2^64 - 1", where=path)
        out[counter] = value
    return out


def _classes(path: str, classes: Any) -> Dict[str, Dict[str, Dict[str, int]]]:
    if not isinstance(classes, dict):
        raise NvtopoError("classes: must map node classes (layout names, or \"*\") to "
                          "families", where=path)
    out: Dict[str, Dict[str, Dict[str, int]]] = {}
    for cls, families in classes.items():
        if not cls:
            raise NvtopoError("classes: a class name is empty", where=path)
        if not isinstance(families, dict):
            raise NvtopoError(f"classes.{cls}: must map families (nvlink, ib, pcie) to counters",
                              where=path)
        out[cls] = {}
        for family, table in families.items():
            if family not in catalog.THRESHOLD_CODES:
                raise NvtopoError(f"classes.{cls}.{family}: no such family (nvlink, ib, pcie)",
                                  where=path)
            out[cls][family] = _family(path, f"classes.{cls}.{family}", family, table)
    return out


def parse(path: str, text: str) -> Thresholds:
    """The thresholds file ``path`` whose content is ``text``."""
    try:
        doc = json.loads(text, object_pairs_hook=_pairs)
    except ValueError as exc:
        raise NvtopoError(f"not a thresholds file: {exc}", where=path) from None
    if not isinstance(doc, dict):
        raise NvtopoError("not a thresholds file: the top level must be an object",
                          where=path)
    extra = sorted(set(doc) - {"schema_version", "classes"})
    if extra:
        raise NvtopoError(f"{extra[0]}: unknown key (schema_version, classes)", where=path)
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise NvtopoError(f"schema_version: must be {SCHEMA_VERSION} (got "
                          f"{json.dumps(version)})", where=path)
    if "classes" not in doc:
        raise NvtopoError("classes: missing", where=path)
    return Thresholds(path=path, classes=_classes(path, doc["classes"]))


def read(path: str) -> Thresholds:
    """Read and validate ``--thresholds FILE``; any fault is one :class:`NvtopoError`.  The
    bytes come through the one bounded reader every input has (a FIFO or device refused,
    never more than :data:`MAX_BYTES` read)."""
    from ..snapshot.read import read_bytes

    raw, where = read_bytes(path, option="--thresholds", limit=MAX_BYTES,
                            what="a thresholds file", content=False)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NvtopoError("not UTF-8 text: not a thresholds file", where=where) from None
    return parse(path, text)
