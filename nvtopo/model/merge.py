"""How a source's model fragment merges into the model (:meth:`Topology.merge`).

GPUs match by PCI bus id where both sources know it (compared as integers), else by index;
NICs by device name.  A fact the model lacks is taken with its source; one both state
differently stays as the model has it and becomes a disagreement.  Sources number GPUs
differently (sysfs in PCI order, NVML by its own index): every fact of the fragment that
names GPUs (matrix rows, NVLink pairs, an HCA's and an NVMe drive's paths to GPUs, sysfs's
bus id map) is renamed to the model's GPUs on the way in.  Pairs, GPUs and NICs are looked up
through indexes, so merging a 144-GPU domain stays linear in its pairs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Tuple

from ..safe import ascii_int, is_ascii_digits
from .core import GPU, GPU_FACTS, NIC, NIC_FACTS, Disagreement, Matrix, NVLinkPair
from .vocab import pci_bdf

if TYPE_CHECKING:  # pragma: no cover
    from .topology import Topology

#: Per-source records of a GPU, a NIC and the node: a fragment's replaces the model's.
GPU_RECORDS = ("nvml", "nvml_text", "sysfs")
NIC_RECORDS = ("affinity", "sysfs")
NODE_RECORDS = ("topo_text", "nvml", "nvml_text", "sysfs", "host_net", "wireguard",
                "gds_text")
#: Sources whose text may be an excerpt (some GPUs only): a GPU they do not name is not
#: absent, so their silence is never a ``presence`` disagreement.
PARTIAL_SOURCES = ("nvml-text",)


def merge(self: "Topology", other: "Topology") -> None:
    relabel = _merge_gpus(self, other)
    rename = {k: v for k, v in relabel.items() if k != v}
    if rename:  # sysfs names GPUs in PCI order: name them as this model does
        for n in other.nics:
            if n.sysfs is not None:
                n.sysfs.relabel(rename)
        if other.sysfs is not None:
            other.sysfs.relabel(rename)
    by_name: Dict[str, NIC] = {}
    for x in self.nics:
        by_name.setdefault(x.name, x)
    for n in other.nics:
        mine_nic = by_name.get(n.name)
        if mine_nic is None:
            self.nics.append(n)
            by_name[n.name] = n
            continue
        for fld in NIC_FACTS:
            _merge_fact(self, mine_nic, n, fld, n.name)
        _take(mine_nic, n, NIC_RECORDS)
    for attr in ("matrix", "p2p"):
        _merge_matrix(self, other, attr, relabel)
    index_map = {a: b for k, v in relabel.items()
                 if is_ascii_digits(k[3:]) and is_ascii_digits(v[3:])
                 for a, b in [(ascii_int(k[3:]), ascii_int(v[3:]))]
                 if a is not None and b is not None}
    have: Dict[Tuple[int, int], NVLinkPair] = {}
    for q in self.nvlinks:
        have.setdefault((min(q.a, q.b), max(q.a, q.b)), q)
    for p in other.nvlinks:
        if index_map:
            p = NVLinkPair(a=index_map.get(p.a, p.a), b=index_map.get(p.b, p.b),
                           count=p.count, source=p.source)
        key = (min(p.a, p.b), max(p.a, p.b))
        have_pair = have.get(key)
        if have_pair is None:
            self.nvlinks.append(p)
            have[key] = p
        elif have_pair.count != p.count and have_pair.source != p.source:
            self.disagreements.append(Disagreement(
                subject=f"GPU{p.a}-GPU{p.b}", fact="nvlink_count",
                values={have_pair.source: have_pair.count, p.source: p.count},
                message=f"{have_pair.source} says NV{have_pair.count}, "
                        f"{p.source} says NV{p.count}"))
    for src in other.sources:
        if src not in self.sources:
            self.sources.append(src)
    for k, v in other.host.items():
        self.host.setdefault(k, v)
    self.notes.extend(other.notes)
    self.disagreements.extend(other.disagreements)
    _take(self, other, NODE_RECORDS)


def _take(mine: Any, theirs: Any, attrs: Tuple[str, ...]) -> None:
    """The fragment's per-source records (and its unknown ``extra`` keys) replace this
    model's."""
    for attr in attrs:
        value = getattr(theirs, attr, None)
        if value is not None:
            setattr(mine, attr, value)
    mine.extra.update(theirs.extra)


def _merge_matrix(self: "Topology", other: "Topology", attr: str,
                  relabel: Dict[str, str]) -> None:
    theirs = getattr(other, attr)
    mine_m = getattr(self, attr)
    if theirs is None:
        return
    if any(relabel.get(d, d) != d for d in theirs.devices):
        theirs = Matrix(devices=[relabel.get(d, d) for d in theirs.devices],
                        cells=theirs.cells, source=theirs.source, mode=theirs.mode)
    if mine_m is None:
        setattr(self, attr, theirs)
        return
    # a source that names NICs by device (mlx5_0) is compared with one that labels them NIC0
    # through the NIC's name
    alias = {n.name: n.label for n in self.nics if n.name != n.label}
    for a, b, tok in theirs.pairs():
        a, b = alias.get(a, a), alias.get(b, b)
        have = mine_m.get(a, b) or mine_m.get(b, a)
        if have is not None and tok is not None and have != tok:
            self.disagreements.append(Disagreement(
                subject=f"{a}-{b}", fact="p2p" if attr == "p2p" else "path",
                values={mine_m.source: have, theirs.source: tok},
                message=f"{mine_m.source} says {have}, {theirs.source} says {tok}"))


def _merge_gpus(self: "Topology", other: "Topology") -> Dict[str, str]:
    """Merge the GPUs of ``other``; returns its labels renamed to this model's."""
    relabel: Dict[str, str] = {}
    by_bdf = {pci_bdf(g.pci_bus_id): g for g in self.gpus if pci_bdf(g.pci_bus_id)}
    by_index: Dict[int, GPU] = {}
    for g in self.gpus:
        by_index.setdefault(g.index, g)
    matched = set()
    unmatched: List[GPU] = []
    for g in other.gpus:
        key = pci_bdf(g.pci_bus_id)
        if key is not None and by_bdf:
            mine = by_bdf.get(key)
        else:
            mine = by_index.get(g.index)
            if mine is not None and key is not None and pci_bdf(mine.pci_bus_id) not in (None,
                                                                                         key):
                mine = None
        if mine is None or id(mine) in matched:
            unmatched.append(g)
            continue
        matched.add(id(mine))
        relabel[g.label] = mine.label
        for fld in GPU_FACTS:
            _merge_fact(self, mine, g, fld, mine.label)
        _take(mine, g, GPU_RECORDS)
    mine_src = ", ".join(self.sources) or "model"
    their_src = ", ".join(other.sources) or "other source"
    had_gpus = bool(self.gpus)
    if had_gpus and other.gpus and not set(other.sources) <= set(PARTIAL_SOURCES):
        for g in self.gpus:
            if id(g) not in matched:
                self.disagreements.append(Disagreement(
                    subject=g.label, fact="presence",
                    values={mine_src: "present", their_src: "absent"},
                    message=f"{mine_src} lists {g.label}"
                            + (f" ({g.pci_bus_id})" if g.pci_bus_id else "")
                            + f", {their_src} does not"))
    taken = {g.index for g in self.gpus}
    for g in unmatched:
        where = f" at {g.pci_bus_id}" if g.pci_bus_id else ""
        if had_gpus and not set(self.sources) <= set(PARTIAL_SOURCES):
            self.disagreements.append(Disagreement(
                subject=g.label if not where else f"GPU{where}", fact="presence",
                values={mine_src: "absent", their_src: "present"},
                message=f"{their_src} lists {g.label}{where}, {mine_src} does not"))
        if g.index in taken:
            # Its index is another GPU's here: keep it out of the GPU list, and give its
            # matrix row a label of its own.
            relabel[g.label] = f"GPU[{g.pci_bus_id or g.label}]"
            continue
        taken.add(g.index)
        self.gpus.append(g)
    self.gpus.sort(key=lambda x: x.index)
    return relabel


def _same(fld: str, a: Any, b: Any) -> bool:
    if fld == "pci_bus_id" and pci_bdf(a) is not None and pci_bdf(b) is not None:
        return pci_bdf(a) == pci_bdf(b)
    return bool(a == b)


def _merge_fact(topo: "Topology", mine: Any, theirs: Any, fld: str, subject: str) -> None:
    """Take ``theirs.fld`` where ``mine`` lacks it; record a disagreement where both differ."""
    new = getattr(theirs, fld)
    src = theirs.sources.get(fld)
    if src is None:
        return
    old = getattr(mine, fld)
    if fld not in mine.sources or (old is None and new is not None):
        setattr(mine, fld, new)
        mine.sources[fld] = src
    elif new is not None and not _same(fld, old, new):
        topo.disagreements.append(Disagreement(
            subject=subject, fact=fld, values={mine.sources[fld]: old, src: new},
            message=f"{mine.sources[fld]} says {old!r}, {src} says {new!r}"))


__all__ = ["merge", "GPU_RECORDS", "NIC_RECORDS", "NODE_RECORDS"]
