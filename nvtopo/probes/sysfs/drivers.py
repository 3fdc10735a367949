"""Which kernel driver holds each GPU and NIC function: what a node with nothing working yet
(after a reimage: no NVIDIA driver, no RDMA driver) still shows on its PCI bus.

The driver is read from the function's ``uevent`` (``DRIVER=nvidia``; no ``DRIVER=`` line:
no driver bound), the same fact as its ``driver`` symlink, kept as a file in the evidence:
a ``uevent`` that was not read (an older snapshot, a tree copied without it) leaves the
driver unknown, never "none".
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...model import Topology
from .parse import to_int

SOURCE = "sysfs"

#: The GPU driver; the drivers that hold a GPU for a virtual machine (passthrough).
NVIDIA_DRIVER = "nvidia"
PASSTHROUGH_DRIVERS = ("vfio-pci", "pci-stub")

#: Mellanox/NVIDIA networking PCI device ids (vendor 0x15b3) -> the card model, from the
#: PCI ID repository (pci-ids.ucw.cz): how a function with no driver is named.
MLX_MODELS = {0x1013: "ConnectX-4", 0x1015: "ConnectX-4 Lx", 0x1017: "ConnectX-5",
              0x1019: "ConnectX-5 Ex", 0x101B: "ConnectX-6", 0x101D: "ConnectX-6 Dx",
              0x101F: "ConnectX-6 Lx", 0x1021: "ConnectX-7", 0x1023: "ConnectX-8",
              0xA2D6: "BlueField-2", 0xA2DC: "BlueField-3"}


def driver_of(dev: Dict[str, Any]) -> Optional[str]:
    """The driver bound to a PCI function as its ``uevent`` says: its name, ``""`` where the
    ``uevent`` was read and names none, ``None`` where it was not read."""
    text = (dev.get("attrs") or {}).get("uevent")
    if not isinstance(text, str):
        return None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "DRIVER":
            return value.strip()
    return ""


def nic_model(dev: Dict[str, Any]) -> Optional[str]:
    """The card model of a Mellanox/NVIDIA networking function, where its id is known."""
    dev_id = to_int((dev.get("attrs") or {}).get("device"), 16)
    return MLX_MODELS.get(dev_id) if dev_id is not None else None


def nic_driver_words(dev: Dict[str, Any]) -> str:
    """What the function's driver says about its missing RDMA device, for its note."""
    drv = driver_of(dev)
    if drv is None:
        return "its RDMA driver (mlx5_ib / ib_core) is not loaded or not bound"
    if drv == "":
        return "no driver is bound to it at all (mlx5_core not loaded: no network either)"
    if drv in PASSTHROUGH_DRIVERS:
        return f"it is bound to {drv} (given to a virtual machine)"
    return f"it is bound to {drv} but has no RDMA device (mlx5_ib / ib_core not loaded)"


def note_gpu_drivers(topo: Topology, gpus: List[Dict[str, Any]],
                     labels: Dict[str, str]) -> None:
    """A note for each GPU no NVIDIA driver holds (none, nouveau, a passthrough driver)."""
    for dev in gpus:
        drv = driver_of(dev)
        if drv is None or drv == NVIDIA_DRIVER:
            continue
        held = ("no driver bound" if drv == "" else
                f"bound to {drv} (passed through to a virtual machine)"
                if drv in PASSTHROUGH_DRIVERS else f"bound to {drv}, not the NVIDIA driver")
        dev_id = ((dev.get("attrs") or {}).get("device") or "?").strip()
        topo.note("sysfs.gpu_driver", f"{labels.get(dev['bdf'], 'GPU')} at {dev['bdf']} "
                  f"(device {dev_id}) is on the PCI bus, {held}",
                  source=SOURCE, level="info" if drv in PASSTHROUGH_DRIVERS else "warning",
                  subject=dev["bdf"])


__all__ = ["NVIDIA_DRIVER", "PASSTHROUGH_DRIVERS", "MLX_MODELS", "driver_of", "nic_model",
           "nic_driver_words", "note_gpu_drivers"]
