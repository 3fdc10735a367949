"""The model: one place for every fact nvtopo knows about a node, typed.

Probes build it; checks, renderers and commands read it; nothing else defines what a fact
is.  The package, one job per module:

* :mod:`.vocab`: path tokens (``NV18``, ``PIX`` ... ``SYS``), P2P status tokens, PCI bus
  ids (:func:`pci_bdf`);
* :mod:`.codec`: records <-> JSON, strict on the way in;
* :mod:`.core`: GPU, NIC, Matrix, NVLinkPair, Note, Disagreement;
* :mod:`.topology`: the node (:class:`Topology`) and how sources merge into it;
* :mod:`.votes`: two agreeing live sources (NVML, sysfs) outvote a text, once merged;
* the per-source records by domain: :mod:`.nvlink`, :mod:`.nvml`, :mod:`.pcie`,
  :mod:`.rdma`, :mod:`.storage`, :mod:`.host`, :mod:`.node`.

The JSON form is the contract in ``docs/json.md`` (``docs/schemas/model.schema.json``).
"""

from __future__ import annotations

from .core import GPU, GPU_FACTS, NIC, NIC_FACTS, Disagreement, Matrix, Note, NVLinkPair
from .host import Host, Origin
from .topology import SCHEMA_VERSION, Topology
from .vocab import (P2P_STATUS, PATH_ALIASES, PATH_DESCRIPTIONS, PATH_ORDER, int_runs,
                    nvlink_count, path_kind, path_rank, pci_bdf)

__all__ = ["SCHEMA_VERSION", "Topology", "Host", "Origin", "GPU", "NIC", "Matrix",
           "NVLinkPair", "Note",
           "Disagreement", "GPU_FACTS", "NIC_FACTS", "PATH_ORDER", "PATH_ALIASES",
           "P2P_STATUS", "PATH_DESCRIPTIONS", "path_kind", "nvlink_count", "path_rank",
           "pci_bdf", "int_runs"]
