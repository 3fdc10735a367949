"""The PCI tree of a simulated node: host bridges, root ports, switch ports and endpoints,
given bus numbers and BDFs the way a BIOS enumerates them.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from .hardware import PciDev

#: A tree spec: ("ep", role, [function roles]) or ("sw", [children]); a host bridge is a list.
Spec = Tuple[Any, ...]

INTEL, BROADCOM, PLX, MELLANOX, NVIDIA = 0x8086, 0x1000, 0x10B5, 0x15B3, 0x10DE
CLS_BRIDGE, CLS_IB, CLS_ETH, CLS_3D, CLS_SWITCH = 0x060400, 0x020700, 0x020000, 0x030200, 0x068000


class PciBuilder:
    """Places complexes (one per host bridge) and their functions, bus by bus."""

    def __init__(self) -> None:
        self.devs: Dict[str, PciDev] = {}
        self.domain = 0
        self.bus = 0

    @staticmethod
    def _need(children: Sequence[Spec]) -> int:
        def count(node: Spec) -> int:
            if node[0] == "ep":
                return 0
            return 1 + sum(1 + count(c) for c in node[1])  # USP's bus + one per DSP
        return 1 + sum(1 + count(c) for c in children)  # host bridge bus + one per root port

    def complex(self, children: Sequence[Spec], numa: int, gts: float,
                sw_vendor: Tuple[int, int] = (BROADCOM, 0xC030)) -> None:
        need = self._need(children)
        if self.bus + need > 0x100:
            self.domain += 1
            self.bus = 0
        dom = self.domain
        hb_bus = self._alloc()
        hb = f"pci{dom:04x}:{hb_bus:02x}"

        def bdf(bus: int, dev: int = 0, fn: int = 0) -> str:
            return f"{dom:04x}:{bus:02x}:{dev:02x}.{fn}"

        def place(node: Spec, at_bus: int, chain: List[str]) -> None:
            if node[0] == "ep":
                for fn, role in enumerate(node[1]):
                    b = bdf(at_bus, 0, fn)
                    self.devs[b] = PciDev(b, hb, chain + [b], numa, 0, 0, 0, gts, 16, role=role)
                return
            usp = bdf(at_bus)
            self.devs[usp] = PciDev(usp, hb, chain + [usp], numa, sw_vendor[0], sw_vendor[1],
                                    CLS_BRIDGE, gts, 16)
            sec = self._alloc()
            for i, child in enumerate(node[1]):
                dsp = bdf(sec, i)
                self.devs[dsp] = PciDev(dsp, hb, chain + [usp, dsp], numa, sw_vendor[0],
                                        sw_vendor[1], CLS_BRIDGE, gts, 16)
                place(child, self._alloc(), chain + [usp, dsp])

        for i, child in enumerate(children):
            rp = bdf(hb_bus, 1 + i)
            self.devs[rp] = PciDev(rp, hb, [rp], numa, INTEL, 0x352A, CLS_BRIDGE, gts, 16)
            place(child, self._alloc(), [rp])

    def _alloc(self) -> int:
        b = self.bus
        self.bus += 1
        return b

