"""The ``nvidia-smi -q`` blocks of a paste, each given its GPU (:func:`attach_q`): by UUID,
then bus id, then (noted) by order; and :func:`na`, how ``-q`` writes "no value"."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...model import pci_bdf
from .vocab import MAX_GPUS


def na(v: str) -> Optional[str]:
    return None if v.strip() in ("", "N/A", "n/a") else v.strip()


def attach_q(gpus: Dict[int, Dict[str, Any]], qblocks: List[Dict[str, Any]],
             notes: Any) -> None:
    """Give every ``-q`` block its GPU: by UUID, then bus id, then (noted) by order."""
    attach = _QAttach(gpus, notes)
    too_many = 0
    for k, blk in enumerate(qblocks):
        if not attach.attach(k, blk):
            too_many += 1
    if too_many:
        notes.add({"code": "nvml_text.too_many_blocks", "level": "warning",
                   "message": f"{too_many} nvidia-smi -q GPU blocks match no GPU and would "
                              f"make more than {MAX_GPUS} GPUs; they are ignored"})


class _QAttach:
    """Where each ``-q`` block goes.  Each lookup is by index (a paste may hold thousands of
    blocks): the GPU with the lowest number that has the UUID (only nvlink headers give
    one), or the bus id (which attaching a block sets), or the next nvlink GPU without a
    block."""

    def __init__(self, gpus: Dict[int, Dict[str, Any]], notes: Any) -> None:
        self.gpus, self.notes = gpus, notes
        self.from_nvlink = sorted(gpus)
        self.no_uuid = [i for i in self.from_nvlink if not gpus[i].get("uuid")]
        self.next_any = self.next_no_uuid = 0
        self.with_q: set = set()
        self.by_uuid: Dict[str, int] = {}
        for i in self.from_nvlink:
            self.by_uuid.setdefault((gpus[i].get("uuid") or "").lower(), i)
        self.by_bdf: Dict[Any, set] = {}
        for i in gpus:
            self.by_bdf.setdefault(self.bdf_of(i), set()).add(i)
        self.top = max(gpus) if gpus else None

    def bdf_of(self, i: int) -> Any:
        return pci_bdf(self.gpus[i].get("bus_id"))

    def attach(self, k: int, blk: Dict[str, Any]) -> bool:
        """The ``k``-th block to its GPU, or to a new one (False: none may be added)."""
        gpus = self.gpus
        uuid = (na(blk["q"].get("GPU UUID", "")) or "").lower()
        if not blk.get("bus_id") and pci_bdf(blk["q"].get("PCI / Bus Id")) is not None:
            # an excerpt without its GPU header: the bus id it prints names the GPU
            blk["bus_id"] = blk["q"]["PCI / Bus Id"].strip()
        bdf = pci_bdf(blk.get("bus_id"))
        target: Optional[int] = None
        if uuid:
            target = self.by_uuid.get(uuid)
        if target is None and bdf is not None and self.by_bdf.get(bdf):
            target = min(self.by_bdf[bdf])
        what = f"the -q block of {blk.get('bus_id') or 'a GPU'}"
        if target is None:
            target = self._by_order(uuid, what)
        if target is None and len(gpus) >= MAX_GPUS:
            return False
        if target is None:
            target = self._new_gpu(k, blk, uuid, bdf, what)
        else:
            g = gpus[target]
            if blk.get("bus_id"):
                self.by_bdf[self.bdf_of(target)].discard(target)
                g["bus_id"] = blk["bus_id"]
                self.by_bdf.setdefault(self.bdf_of(target), set()).add(target)
            g["q"].update(blk["q"])
            g["notes"].merge(blk["notes"])
        self.with_q.add(target)
        return True

    def _by_order(self, uuid: str, what: str) -> Optional[int]:
        """Last resort: the next nvlink GPU without a -q block, unless both UUIDs are known
        (and differ: then it is another GPU)."""
        target: Optional[int] = None
        if uuid:
            while (self.next_no_uuid < len(self.no_uuid)
                   and self.no_uuid[self.next_no_uuid] in self.with_q):
                self.next_no_uuid += 1
            if self.next_no_uuid < len(self.no_uuid):
                target = self.no_uuid[self.next_no_uuid]
        else:
            while (self.next_any < len(self.from_nvlink)
                   and self.from_nvlink[self.next_any] in self.with_q):
                self.next_any += 1
            if self.next_any < len(self.from_nvlink):
                target = self.from_nvlink[self.next_any]
        if target is not None:
            self.notes.add({"code": "nvml_text.q_by_order", "level": "warning",
                            "subject": f"GPU{target}",
                            "message": f"{what} names no GPU UUID or bus id the nvlink "
                                       f"output knows; attached to GPU {target} by its "
                                       "order in the paste"})
        return target

    def _new_gpu(self, k: int, blk: Dict[str, Any], uuid: str, bdf: Any, what: str) -> int:
        """A block that matches no GPU: a GPU of its own, numbered after the others."""
        gpus = self.gpus
        target = k if self.top is None else self.top + 1
        while target in gpus:
            target += 1
        self.top = target if self.top is None else max(self.top, target)
        if blk.get("headerless") and not uuid and bdf is None:
            self.notes.add({"code": "nvml_text.q_no_identity", "level": "info",
                            "subject": f"GPU{target}",
                            "message": "a -q excerpt without its GPU header, UUID or bus id: "
                                       f"its facts are listed as GPU {target}, but which GPU "
                                       "of the node it is, the paste does not say"})
        if self.from_nvlink:
            self.notes.add({"code": "nvml_text.q_unmatched", "level": "warning",
                            "subject": f"GPU{target}",
                            "message": f"{what} ({blk['q'].get('GPU UUID') or 'no UUID'}) "
                                       "matches no GPU of the nvlink output; listed as GPU "
                                       f"{target} (nvidia-smi -q prints no GPU index)"})
        gpus[target] = dict(blk, index=target)
        self.by_bdf.setdefault(self.bdf_of(target), set()).add(target)
        return target
