"""The simulated node as ``nvidia-smi topo -m`` prints it (tab-separated, modern legend)."""

from __future__ import annotations

from typing import List

from .hardware import Machine

LEGEND = """Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def render(m: Machine) -> str:
    """The text of ``nvidia-smi topo -m`` on this machine.

    Devices: GPUs in PCI order, then RDMA devices in PCI order as ``NICn`` with
    a NIC Legend.  Cells: ``NV#`` where GPUs share NVLinks, else the PCIe
    path level.  GPU rows end with CPU Affinity, NUMA Affinity and GPU NUMA ID
    (``N/A`` off Grace), with nvidia-smi's double TAB before the last.
    """
    gpus = m.gpus_in_order()
    nics = m.nics_in_order()
    labels = [f"GPU{i}" for i in range(len(gpus))] + [f"NIC{i}" for i in range(len(nics))]
    devs = [m.dev_of_gpu(g) for g in gpus] + [m.dev_of_nic(n) for n in nics]
    ng = len(gpus)
    out: List[str] = ["\t" + "\t".join(labels) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for i, label in enumerate(labels):
        cells = []
        for j in range(len(labels)):
            if i == j:
                cells.append(" X ")
            elif i < ng and j < ng and m.topo_pair_count(gpus[i], gpus[j]):
                cells.append(f"NV{m.topo_pair_count(gpus[i], gpus[j])}")
            else:
                cells.append(m.path_level(devs[i], devs[j]))
        row = label + "\t" + "\t".join(cells)
        if i < ng:
            g = gpus[i]
            numa_id = "N/A" if g.gpu_numa_id is None else str(g.gpu_numa_id)
            row += f"\t{g.cpus}\t{g.numa}\t\t{numa_id}"
        out.append(row)
    text = "\n".join(out) + "\n\n" + LEGEND
    if nics:
        text += "\nNIC Legend:\n\n" + "".join(f"  NIC{i}: {n.name}\n" for i, n in enumerate(nics))
    return text
