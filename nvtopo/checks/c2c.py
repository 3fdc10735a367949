"""NVLink-C2C: the Grace CPU-GPU link of GH200/GB200 superchips (NVML), and the GPU memory's
own NUMA node (``docs/nvml.md §9``).

What NVML says is judged on its own: C2C mode off on a Grace superchip, mode on with no C2C
link, or some of its C2C links inactive, is a fault whatever the layout (an error where the layout expects C2C from
stated evidence, else a warning).  The layout's ``c2c`` section adds the expected link count
and that each GPU's memory is a NUMA node.  NVML that was not asked (not a Grace GPU, a pasted
text, a snapshot from before C2C was recorded) says nothing: "not checked", never a pass.
"""

from __future__ import annotations

from typing import Any, List, Optional

from . import Finding, demote, facts as F, finding
from . import subject as S
from .select import Selection
from ..model import Topology

_HINT_DOWN = ("C2C links are inside the superchip module: check nvidia-smi -q (C2C mode) and "
              "dmesg for NVLink-C2C / Xid errors; a module whose C2C links do not train needs "
              "a reset or a service call")


def check(topo: Topology, sel: Selection) -> List[Finding]:
    layout = sel.layout
    v = F.view(topo)
    out: List[Finding] = []
    want = layout.c2c if layout is not None else None
    expects = want is not None and want.enabled is True
    inferred = want.inferred() if want is not None and want.stated else True
    sev = demote("error", inferred) if expects else "warning"
    want_links = want.links_per_gpu if want is not None else None
    unknown: List[str] = []
    for i in v.present:
        g = topo.gpu(i)
        rec = g.nvml.c2c if g is not None and g.nvml is not None else None
        if rec is None:
            if expects:
                unknown.append(f"GPU{i}")
            continue
        subj = S.gpu(i)
        if rec.enabled is False:
            out.append(finding(
                sev, "c2c.disabled", subj,
                f"GPU{i}'s NVLink-C2C to its Grace CPU is off (C2C mode disabled"
                + (f"; {rec.links_active} of {rec.link_count} links active"
                   if rec.links_active is not None and rec.link_count else "")
                + "): CPU-GPU traffic and the GPU's coherent access to CPU memory lose "
                "their NVLink-C2C path",
                expected="enabled", actual="disabled", source="nvml", hint=_HINT_DOWN,
                covers=[subj]))
            continue
        if rec.enabled is True and rec.link_count == 0:
            # Mode on and no link present: on Grace, C2C is the GPU's only path to its CPU
            # and the CPU memory, so this is no C2C at all (never a pass for "0 of 0 down").
            out.append(finding(
                sev, "c2c.no_links", subj,
                f"GPU{i}: NVLink-C2C mode is enabled but NVML reports 0 C2C links: the GPU has "
                "no NVLink-C2C path to its Grace CPU and the CPU memory",
                expected=want_links if isinstance(want_links, int) and want_links > 0
                else "at least 1", actual=0, source="nvml", hint=_HINT_DOWN, covers=[subj]))
            continue
        down = rec.down
        if down:
            out.append(finding(
                sev, "c2c.link_down", subj,
                f"GPU{i}: {len(down)} of {rec.link_count} NVLink-C2C links inactive "
                f"(link{'s' if len(down) > 1 else ''} {', '.join(str(x) for x in down)})"
                + (f"; {rec.bandwidth_gbps:g} GB/s left to the CPU"
                   if rec.bandwidth_gbps is not None else ""),
                expected=rec.link_count, actual=rec.links_active, source="nvml",
                hint=_HINT_DOWN, covers=[subj]))
        elif isinstance(want_links, int) and isinstance(rec.link_count, int) \
                and rec.link_count < want_links:
            out.append(finding(
                demote(sev, want is not None and want.inferred("links_per_gpu")),
                "c2c.links_low", subj,
                f"GPU{i} has {rec.link_count} NVLink-C2C links, the layout has {want_links}",
                expected=want_links, actual=rec.link_count, source="nvml",
                hint=_HINT_DOWN, covers=[subj]))
        if rec.enabled is None or rec.link_count is None or \
                (rec.link_count and rec.links_active is None):
            unknown.append(f"GPU{i} " + ("C2C mode" if rec.enabled is None else "C2C links"))
        # (g is known here: rec is its C2C record)
        if (want is not None and want.gpu_memory_numa is True and g.gpu_numa_id is None  # type: ignore[union-attr]
                and g.nvml.unavailable.get("numa_node_id") == "not_supported"):  # type: ignore[union-attr]
            out.append(finding(
                "warning", "c2c.gpu_numa_missing", subj,
                f"GPU{i}'s memory is not a NUMA node (NVML has no NUMA node id for it): the "
                "driver runs without NUMA-onlined GPU memory (CDMM mode, or the memory was "
                "not onlined): numactl and the kernel cannot place pages in GPU memory",
                expected="a GPU memory NUMA node", actual="none", source="nvml",
                hint="by design under Coherent Driver-based Memory Management (CDMM); "
                     "otherwise check the nvidia driver's NUMA mode and that the GPU memory "
                     "was onlined (numactl -H lists the CPU-less nodes)"))
    if unknown:
        out.append(finding(
            "info", "c2c.not_checked", S.NODE,
            "NVLink-C2C not checked: " + ", ".join(unknown[:8])
            + (f" and {len(unknown) - 8} more" if len(unknown) > 8 else "")
            + " (NVML did not say: a pasted text, an older snapshot, or the calls are "
            "unsupported)", source=", ".join(topo.sources)))
    return out
