"""``nvtopo simulate``: complete synthetic snapshots of a node of a layout, healthy or faulty.

One machine description (:mod:`.machine`) is built from the layout and changed
by the faults (:mod:`.faults`); every probe's evidence is then produced from
it the way the probe would record it on a real node:

* ``topo-text``: the ``nvidia-smi topo -m`` text (:mod:`.topo`);
* ``nvml``: the NVML probe's own walker and recorder
  (:func:`nvtopo.probes.nvml.record`) asking a source that answers from the machine's
  NVML call table as the library would (:mod:`.nvml_record`, :mod:`.nvml_table`);
* ``sysfs``: the sysfs probe's own traversal (:func:`nvtopo.probes.sysfs.collect`) run
  over the machine's sysfs tree held in memory (:mod:`.sysfs_tree`).

Only the probes' public functions are used: no ``pynvml``, no private state.

A healthy node derives without disagreements between the sources.  The
document says it is simulated: ``"simulated": {"layout", "faults", "seed",
"assumptions"}``; everything in it is deterministic for a given seed.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence, TypeVar

from .. import __version__
from ..errors import NvtopoError
from ..layouts import Layout
from . import faults as faults_mod
from . import machine as machine_mod
from . import sources, sysfs_tree, topo

#: The time written into simulated snapshots (fixed: documents are deterministic).
SIM_TIME = "2026-01-01T00:00:00+00:00"


#: What the simulator raises when a layout is past what it can lay out (PCI bus numbers, or
#: device numbers on a bus, run out: 128 GPUs, 64 NVSwitches): a layout the reader accepts.
F = TypeVar("F", bound=Callable[..., Any])
_NO_ROOM = (StopIteration, ValueError, IndexError, KeyError, RuntimeError, OverflowError,
            RecursionError)


def _simulable(fn: F) -> F:
    """``fn`` (:func:`build`, :func:`snapshot`), with the simulator running out of room for
    a layout made one line naming the layout (exit status 2), never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except NvtopoError:
            raise
        except _NO_ROOM as exc:
            first = args[0] if args else None
            lay = getattr(first, "layout", first)
            name = getattr(lay, "name", None) or "the layout"
            why = str(exc) or "PCI bus numbers run out"
            raise NvtopoError(f"cannot simulate a node of this layout: the simulated machine "
                              f"has no room for it ({type(exc).__name__}: {why}); real "
                              f"snapshots of such a node are still read and checked",
                              where=f"layout {name}") from None

    return wrapper  # type: ignore[return-value]


@_simulable
def build(layout: Layout, fault_specs: Sequence[str] = (), seed: int = 0,
          hostname: Optional[str] = None, mesh: bool = False) -> machine_mod.Machine:
    """The machine of ``layout`` with the faults applied (specs checked first, all of them);
    ``mesh`` (or a ``wg-`` fault): a WireGuard mesh on it (:mod:`.mesh`)."""
    from . import imex as imex_mod
    from . import mesh as mesh_mod

    wg = [s for s in fault_specs if mesh_mod.is_mesh_fault(s)]
    ix = [s for s in fault_specs if imex_mod.is_imex_fault(s)]
    parsed = [faults_mod.parse(s) for s in fault_specs if s not in wg and s not in ix]
    for s in wg:
        mesh_mod.parse(s)
    for s in ix:
        imex_mod.parse(s, layout)
    m = machine_mod.build(layout, seed=seed, hostname=hostname)
    faults_mod.apply(m, parsed)
    if mesh or wg:
        m.mesh = mesh_mod.lone(seed, wg)  # type: ignore[attr-defined]
        m.faults.extend(wg)
    m.imex = imex_mod.lone(layout, ix, m.hostname)  # type: ignore[attr-defined]
    m.faults.extend(ix)
    return m


@_simulable
def snapshot(m: machine_mod.Machine) -> Dict[str, Any]:
    """The snapshot document of a machine."""
    from . import nvml_record

    text = topo.render(m)
    nvml_ev = nvml_record.record(sources.nvml_description(m))
    # what the recording says about the machine it ran on, not about this process (the
    # "simulated" label is the one simulated snapshots have always carried)
    nvml_ev["duration_s"] = 0.0
    nvml_ev["library"] = {"module": "pynvml", "file": None,
                          "simulated": "nvtopo.simulate.fake_nvml"}
    tree = sources.sysfs_tree(m)
    mesh = getattr(m, "mesh", None)
    if mesh is not None:
        from . import mesh as mesh_mod

        mesh_mod.add_to_tree(tree, mesh)
    sysfs_ev = sysfs_tree.capture(tree)
    imex = getattr(m, "imex", None)
    if imex is not None:
        from .imex import evidence as imex_evidence
    arch = "aarch64" if m.family.grace else "x86_64"
    return {
        "kind": "nvtopo-snapshot",
        "schema_version": 1,
        "nvtopo_version": __version__,
        "host": {"hostname": m.hostname, "kernel": "5.15.0-simulated", "os": "Linux",
                 "machine": arch, "time": SIM_TIME},
        "simulated": {"layout": m.layout.name, "layout_origin": m.layout.origin,
                      "faults": list(m.faults), "seed": m.seed,
                      "assumptions": list(m.assumptions)},
        "duration_s": 0.0,
        "probes": {
            "topo-text": {"command": "nvidia-smi", "args": ["topo", "-m"], "exit_status": 0,
                          "stdout": text, "stderr": "", "duration_s": 0.0, "timeout_s": 30.0,
                          "status": "ok", "error": None},
            "nvml": nvml_ev,
            "sysfs": sysfs_ev,
            "host": {"status": "skipped", "error": "simulated node: no host facts"},
            **({"wireguard": mesh_mod.evidence(mesh)} if mesh is not None else {}),
            **({"imex": imex_evidence(imex)} if imex is not None else {}),
        },
    }


def simulate(layout: Layout, fault_specs: Sequence[str] = (), seed: int = 0,
             hostname: Optional[str] = None, mesh: bool = False) -> Dict[str, Any]:
    """A complete synthetic snapshot of a node of ``layout`` with ``fault_specs`` applied
    (``mesh``: with a WireGuard mesh)."""
    return snapshot(build(layout, fault_specs, seed=seed, hostname=hostname, mesh=mesh))


FAULT_KINDS: List[str] = list(faults_mod.KINDS)

def nvlink_domain(n: int) -> Layout:
    """A synthetic layout of an ``n``-GPU NVSwitch domain (GB200-class: 18 NVLink5 links per
    GPU, NV18 between every pair, one 400G InfiniBand NIC per GPU, two GPUs per NUMA node),
    for benchmarks and tests at scales no bundled layout has (a 72-GPU NVL72 domain)."""
    import json

    from ..layouts import parse as parse_layout

    doc = {"schema": 1, "name": f"nvl{n}", "gpus": {"count": n, "name_pattern": "GB200"},
           "nvlink": {"generation": "5.0", "links_per_gpu": 18, "nvswitch": True,
                      "nvswitch_count": 18, "pair_count": 18, "fabric": True},
           "nics": {"compute": {"count": n, "rate_gbps": 400, "link_layer": "InfiniBand"},
                    "placement": {"gpu_to_nearest_compute_nic": "PIX",
                                  "gpus_per_compute_nic": 1}},
           "numa": {"nodes_with_gpus": max(1, n // 2)}}
    return parse_layout(json.dumps(doc), f"nvl{n}")


__all__ = ["simulate", "build", "snapshot", "nvlink_domain", "FAULT_KINDS", "SIM_TIME"]
