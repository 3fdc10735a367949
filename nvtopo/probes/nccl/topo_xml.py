"""NCCL's topology XML: what NCCL dumps (``NCCL_TOPO_DUMP_FILE``) and reads
(``NCCL_TOPO_FILE``), as NCCL's ``src/graph/xml.cc`` writes it::

    <system version="1">
      <cpu numaid="0" affinity="00000000,0000000f" arch="x86_64" vendor="GenuineIntel" ...>
        <pci busid="0000:11:00.0" class="0x060400" link_speed="8.0 GT/s PCIe" link_width="16">
          <pci busid="0000:17:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
            <gpu dev="0" sm="80" rank="0" gdr="1">
              <nvlink target="0000:e7:00.0" count="2" tclass="0x068000"/>
            </gpu>
          </pci>
          <pci busid="0000:18:00.0" class="0x020700" ...>
            <nic><net name="mlx5_0" dev="0" speed="200000" port="1" gdr="1" .../></nic>
          </pci>
        </pci>
      </cpu>
    </system>

Its graph dump (``NCCL_GRAPH_DUMP_FILE``: ``<graphs version="1"><graph id pattern nchannels
speedintra speedinter typeintra typeinter ...><channel><net dev/><gpu dev/>...``) is read by the
same reader into ``graphs``.

Parsed by expat with handlers only: a DTD of its own, any declaration or entity is refused
(NCCL writes none); nesting deeper than :data:`MAX_DEPTH` or more than :data:`MAX_ELEMENTS`
elements is refused; a document cut short keeps what was read before the cut.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional
from xml.parsers import expat

from ...errors import NvtopoError
from ...model.nccl import (NcclGraph, NcclTopo, NcclTopoCpu, NcclTopoGpu, NcclTopoLink,
                           NcclTopoNet, NcclTopoPci)
from ...model.topology import Topology
from ...safe import ascii_int, printable

SOURCE = "nccl-topo"
MAX_DEPTH = 64
MAX_ELEMENTS = 100_000
MAX_ATTR = 256


def looks_like(text: str) -> bool:
    """Whether ``text`` is NCCL's topology XML: markup whose first 4 KiB hold its
    ``<system version=`` root (after an XML declaration or a DOCTYPE, which is refused)."""
    head = text.lstrip("\ufeff \t\r\n")[:4096]
    return head.startswith("<") and ("<system version=" in head or "<graphs version=" in head)


class _Refused(Exception):
    pass


def _refuse(*_args: object) -> None:
    raise _Refused("XML with declarations or entities is refused (NCCL writes none)")


def _attr(attrs: Dict[str, str], key: str) -> Optional[str]:
    v = attrs.get(key)
    return printable(v[:MAX_ATTR]) if isinstance(v, str) else None


def _graph(attrs: Dict[str, str]) -> NcclGraph:
    def num(*keys: str) -> Optional[float]:
        for k in keys:
            v = attrs.get(k)
            if isinstance(v, str) and len(v) < 24:
                try:
                    f = float(v)
                except ValueError:
                    continue
                if f == f and abs(f) < 1e12:
                    return f
        return None

    return NcclGraph(id=_int(attrs, "id"), pattern=_int(attrs, "pattern"),
                     nchannels=_int(attrs, "nchannels"), crossnic=_int(attrs, "crossnic"),
                     bw_intra=num("bwintra", "speedintra"), bw_inter=num("bwinter", "speedinter"),
                     type_intra=_attr(attrs, "typeintra"), type_inter=_attr(attrs, "typeinter"))


def _int(attrs: Dict[str, str], key: str) -> Optional[int]:
    v = attrs.get(key)
    return ascii_int(v, signed=True) if isinstance(v, str) and len(v) < 24 else None


class _Reader:
    def __init__(self) -> None:
        self.topo = NcclTopo()
        self.stack: List[str] = []
        self.pci: List[str] = []  # enclosing <pci> busids
        self.numa: Optional[int] = None
        self.count = 0

    def start(self, name: str, attrs: Dict[str, str]) -> None:
        self.count += 1
        if len(self.stack) >= MAX_DEPTH or self.count > MAX_ELEMENTS:
            raise _Refused(f"NCCL topology XML deeper than {MAX_DEPTH} or larger than "
                           f"{MAX_ELEMENTS:,} elements is refused")
        self.stack.append(name)
        parent = self.pci[-1] if self.pci else None
        t = self.topo
        if name in ("system", "graphs"):
            t.version = _attr(attrs, "version")
        elif name == "graph":
            t.graphs.append(_graph(attrs))
        elif name == "channel" and t.graphs and "graph" in self.stack:
            t.graphs[-1].channels.append("")
        elif name in ("net", "gpu") and "channel" in self.stack and t.graphs \
                and t.graphs[-1].channels:
            g = t.graphs[-1]
            g.channels[-1] = (g.channels[-1] + f" {name}{_int(attrs, 'dev')}").strip()[:512]
        elif name == "cpu":
            self.numa = _int(attrs, "numaid")
            t.cpus.append(NcclTopoCpu(numaid=self.numa, affinity=_attr(attrs, "affinity"),
                                      arch=_attr(attrs, "arch"), vendor=_attr(attrs, "vendor")))
        elif name == "pci":
            busid = (_attr(attrs, "busid") or "").lower()
            t.pcis.append(NcclTopoPci(busid=busid, class_=_attr(attrs, "class"),
                                      link_speed=_attr(attrs, "link_speed"),
                                      link_width=_int(attrs, "link_width"), parent=parent,
                                      numaid=self.numa))
        elif name == "gpu":
            self._holds("gpu")
            t.gpus.append(NcclTopoGpu(busid=parent or "", dev=_int(attrs, "dev"),
                                      sm=_int(attrs, "sm"), rank=_int(attrs, "rank"),
                                      gdr=_int(attrs, "gdr")))
        elif name in ("nvlink", "c2c") and t.gpus and "gpu" in self.stack:
            t.gpus[-1].nvlinks.append(NcclTopoLink(
                target=(_attr(attrs, "target") or name).lower(), count=_int(attrs, "count"),
                tclass=_attr(attrs, "tclass")))
        elif name == "nic":
            self._holds("nic")
        elif name == "net":
            t.nets.append(NcclTopoNet(name=_attr(attrs, "name") or "", busid=parent,
                                      dev=_int(attrs, "dev"), speed=_int(attrs, "speed"),
                                      port=_int(attrs, "port"), gdr=_int(attrs, "gdr")))
        if name == "pci":
            self.pci.append(t.pcis[-1].busid)

    def _holds(self, what: str) -> None:
        if self.pci and self.topo.pcis:
            for p in reversed(self.topo.pcis):
                if p.busid == self.pci[-1]:
                    p.holds = what
                    break

    def end(self, name: str) -> None:
        if self.stack:
            self.stack.pop()
        if name == "pci" and self.pci:
            self.pci.pop()
        if name == "cpu":
            self.numa = None


def parse(text: str, where: str = "NCCL topology XML") -> NcclTopo:
    """The document's facts; refused XML is a one-line :class:`NvtopoError`."""
    reader = _Reader()
    parser: Any = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    for handler in ("StartDoctypeDeclHandler", "ElementDeclHandler", "AttlistDeclHandler",
                    "EntityDeclHandler", "UnparsedEntityDeclHandler"):
        setattr(parser, handler, _refuse)
    parser.ExternalEntityRefHandler = lambda *a: 0
    body = text.lstrip("\ufeff \t\r\n")
    try:
        parser.Parse(body, True)
    except _Refused as exc:
        raise NvtopoError(str(exc), where=where) from None
    except expat.ExpatError as exc:
        if not reader.topo.pcis and not reader.topo.cpus:
            raise NvtopoError(f"not well-formed XML ({expat.ErrorString(exc.code)} at line "
                              f"{exc.lineno})", where=where) from None
        reader.topo.truncated = True
    return reader.topo


def derive_text(text: str, where: str = "NCCL topology XML") -> Topology:
    """A model holding only the document (``extra.nccl-topo``)."""
    topo = Topology(sources=[SOURCE])
    topo.nccl_topo = parse(text, where)
    return topo


__all__ = ["SOURCE", "derive_text", "looks_like", "parse"]
