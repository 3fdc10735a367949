"""The shape of a derived model, written as data: what a sealed cache must look like to be used.

A snapshot's sealed cache (``"derived"``, see :mod:`nvtopo.snapshot`) is used
instead of re-deriving the evidence only when its model has exactly the
shape :func:`nvtopo.snapshot.derive` gives a model derived from evidence as
nvtopo's probes record it: every key named here, with one of the JSON types
named here, and no other key except where derive itself writes free-form keys
(:class:`Map`: counter names, link numbers, device names).  The seal guards
against accidental edits; this guards the commands (``check``, ``links``,
``ib``, ``show``) against a cache that was edited and sealed anew.

A cache that does not fit is not an error: the model is re-derived from the
evidence, which gives the same answer the cache would have had if it were
true.  So the description may be narrower than every model derive can make
(a model of damaged evidence, say, with a value no probe records): such a
file is only read more slowly.  It must never be wider than what the
commands accept.

The checker is one walk over the cache (a DGX H100 model: about 7,000 values,
1-2 ms), far cheaper than re-deriving (10-15 ms).
"""

from __future__ import annotations

from typing import Any, Dict, FrozenSet, Optional, Union

from .model import GPU_FACTS

_NoneType = type(None)

#: Largest magnitude a number in a cache may have: 64-bit counters (times 4 for the IB data
#: counters, which count 4-byte words) fit, and every such number converts to a float.
LIMIT = 2 ** 72

Leaf = FrozenSet[type]
Spec = Union[Leaf, "Obj", "Map", "List"]

# Leaf types: exact Python types as json.loads makes them (bool is not int here).
S: Leaf = frozenset({str})
SN: Leaf = frozenset({str, _NoneType})
I: Leaf = frozenset({int})
IN: Leaf = frozenset({int, _NoneType})
F: Leaf = frozenset({float})
FN: Leaf = frozenset({float, _NoneType})
NUMN: Leaf = frozenset({int, float, _NoneType})
B: Leaf = frozenset({bool})
BN: Leaf = frozenset({bool, _NoneType})
N: Leaf = frozenset({_NoneType})


class Obj:
    """An object with the keys named (``"name?"``: may be absent; others always present)."""

    __slots__ = ("fields", "required", "nullable")

    def __init__(self, fields: Dict[str, Spec], nullable: bool = False) -> None:
        self.fields = {k.rstrip("?"): v for k, v in fields.items()}
        self.required = frozenset(k for k in fields if not k.endswith("?"))
        self.nullable = nullable


class Map:
    """An object whose keys are free-form (derive writes names it read) and whose values
    all have one shape (``count``: exactly that many keys)."""

    __slots__ = ("value", "nullable", "count")

    def __init__(self, value: Spec, nullable: bool = False, count: Optional[int] = None
                 ) -> None:
        self.value = value
        self.nullable = nullable
        self.count = count


class List:
    """A list whose items all have one shape."""

    __slots__ = ("item", "nullable")

    def __init__(self, item: Spec, nullable: bool = False) -> None:
        self.item = item
        self.nullable = nullable


def Opt(spec: Any) -> Any:  # noqa: N802 - reads as a type
    """``spec`` or ``null``."""
    if isinstance(spec, frozenset):
        return spec | N
    if isinstance(spec, Obj):
        out = Obj({}, nullable=True)
        out.fields, out.required = spec.fields, spec.required
        return out
    if isinstance(spec, Map):
        return Map(spec.value, nullable=True, count=spec.count)
    return List(spec.item, nullable=True)


# --- the model ------------------------------------------------------------------------------

# nvml and nvml-text: the per-GPU record and its links (one renderer reads both) ------------

_REMOTE = Obj({"type": S, "gpu_index": IN, "pci_bus_id": SN, "link": IN})
_FABRIC = Obj({"state": S, "status": SN, "cluster_uuid": SN, "clique_id": IN,
               "health": Opt(Obj({"degraded_bandwidth": BN, "route_recovery": BN,
                                  "route_unhealthy": BN, "access_timeout_recovery": BN,
                                  "incorrect_configuration": SN, "partition_assigned": BN,
                                  "gfm_state": SN})),
               "health_summary": SN, "attached": BN, "healthy": BN})
_PCIE = Obj({k: IN for k in ("current_gen", "max_gen", "gpu_max_gen", "current_width",
                             "max_width", "replay_counter")})
_NVML_LINK = Obj({
    "link": I, "state": S, "raw_state": SN, "rule": S, "reason": S, "version": SN,
    "version_raw": IN, "speed_mbps": IN, "remote": _REMOTE,
    "errors": Obj({f"{k}?": IN for k in ("replay", "recovery", "crc_flit", "crc_data", "ecc")}),
    "unavailable": Map(S)})
_NVML_GPU = Obj({
    "index": I,
    "fault": Opt(Obj({"kind": S, "call": S, "message": S})),
    "serial": SN, "minor_number": IN, "architecture": SN, "compute_capability": SN,
    "memory_total_bytes": IN,
    "pci": Obj({"bus_id": SN, "bdf": Opt(List(I)), "device_id": SN}),
    "pcie": _PCIE,
    "mig": Opt(Obj({"current": B, "pending": B})),
    "persistence_mode": BN,
    "fabric": Opt(_FABRIC),
    "unavailable": Map(S),
    # a GPU without NVLink facts has the short record (status, total, active, links)
    "nvlink": Obj({"status": S, "total": IN, "active": IN, "links": List(_NVML_LINK),
                   "count_source?": SN, "peers?": List(I), "switch_links_up?": I,
                   "bandwidth_gbps_per_direction?": FN}),
})
_P2P_MATRIX = Obj({"devices": List(S), "cells": List(List(SN))})
_NVML_NODE = Obj({
    "status": S, "reason": SN,
    "system": Obj({"driver_version?": SN, "nvml_version?": SN, "cuda_driver_version?": IN,
                   "device_count?": I}),
    "incomplete": Opt(Obj({"call": SN, "gpu": IN})),
    "ncalls": I, "duration_s": FN,
    "bad_values": List(Obj({"call": S, "gpu": IN, "value": S, "expected": S})),
    # what follows is absent when NVML was unavailable
    "nvlink_pairs?": List(Obj({"a": I, "b": I, "count": IN, "rule": S, "reason?": S,
                               # the two GPUs' own counts
                               "direct?": Map(I, count=2), "asymmetric?": B,
                               "switch_links?": Map(I, count=2)})),
    "nvswitch?": B,
    "switches?": Map(Map(I)),
    "p2p?": Obj({f"{k}?": _P2P_MATRIX for k in ("read", "write", "nvlink", "atomics")}),
})

_TEXT_LINK = Obj({
    "link": I, "state": S, "raw_state": S, "rule": SN, "reason": SN, "version": N,
    "version_raw": N, "speed_mbps": IN, "remote": _REMOTE, "errors": Map(I),
    "capabilities": Opt(Map(B))})
_TEXT_GPU = Obj({
    "index": I, "fault": N,
    "nvlink": Obj({"status": S, "total": IN, "count_source": S, "active": I,
                   "bandwidth_gbps_per_direction": FN, "links": List(_TEXT_LINK),
                   "reason?": S}),
    "fabric": Opt(_FABRIC), "pcie": Opt(_PCIE), "pci": Obj({"bus_id": SN}), "notes": List(S)})
_TEXT_NODE = Obj({"sections": List(S),
                  "nvlink_pairs": List(Obj({"a": I, "b": I, "count": I}))})

# sysfs ---------------------------------------------------------------------------------------

_LINK = Obj({
    "current_gts": FN, "current_gen": IN, "current_width": IN,
    "max_gts": FN, "max_gen": IN, "max_width": IN,
    "raw": Obj({k: SN for k in ("current_link_speed", "current_link_width", "max_link_speed",
                                "max_link_width")}),
    "unknown?": Map(S), "width_below_max": BN, "speed_below_max": BN})
_HOP_FIELDS: Dict[str, Spec] = {
    "upstream": S, "downstream": S,
    "current_gts": FN, "current_gen": IN, "current_width": IN,
    "expected_gts": FN, "expected_gen": IN, "expected_width": IN,
    "width_degraded": BN, "speed_below_expected": BN}
_HOP = Obj(_HOP_FIELDS)
#: The narrowest hop is one whose current speed and width are known.
_NARROWEST = Opt(Obj(dict(_HOP_FIELDS, current_gts=F, current_gen=I, current_width=I)))
_SYSFS_GPU = Obj({
    "pci_address": S, "device_id": SN, "class": S, "numa_node": IN, "local_cpulist": SN,
    "host_bridge": S, "chain": List(S), "link": _LINK, "hops": List(_HOP),
    "narrowest_hop": _NARROWEST, "layout_note?": S, "numa_unknown?": S})
_PORT = Obj({
    "port": I, "state": SN, "state_code": IN, "phys_state": SN, "phys_state_code": IN,
    "rate_gbps": NUMN,
    "rate": Obj({"raw": SN, "gbps": NUMN, "lanes": IN, "width": SN, "speed": SN}),
    "link_layer": SN, "transport": SN, "netdev": SN, "lid": IN, "sm_lid": IN,
    "gid0": SN, "port_guid": SN, "gid0_type": SN, "gid0_netdev": SN,
    "counters": Opt(Map(IN)), "counters_unknown": Map(S), "counters_saturated": List(S),
    "error_counters": Map(I), "data_bytes": Obj({"xmit?": IN, "rcv?": IN}),
    "hw_counters": Opt(Map(IN)), "hw_counters_unknown": Map(S), "unknown": Map(S),
    "rate_note?": S, "counters_note?": S, "counters_status": S, "hw_counters_status": S})
_HCA = Obj({
    "name": S, "pci_address": SN, "numa_node": IN, "parent": S, "soft": B,
    "node_type": SN, "node_guid": SN, "sys_image_guid": SN, "fw_ver": SN, "hca_type": SN,
    "board_id": SN, "device_path": S,
    "netdevs": List(Obj({"name": S, "dev_port": IN, "dev_id": IN, "type": IN})),
    "unknown": Map(S),
    "pci": Opt(Obj({"device_id": SN, "class": SN, "local_cpulist": SN, "host_bridge": SN,
                    "chain": List(S), "link": _LINK, "narrowest_hop": _NARROWEST})),
    "numa_unknown?": S, "pci_note?": S,
    "hw_counters": Opt(Map(IN)), "hw_counters_status": S, "skipped_ports": List(S),
    "ports": List(_PORT),
    "gpu_paths": Map(SN), "nearest_gpus": List(S), "nearest_gpu_path": SN})
_SYSFS_NODE = Obj({
    "root": S, "absent_devices": Map(S), "rdma?": S,
    "nvme": List(Obj({"pci_address": S, "numa_node": IN, "link": _LINK,
                      "narrowest_hop": _NARROWEST, "gpu_paths": Map(SN),
                      "nearest_gpus": List(S)})),
    "gpu_bus_ids": Map(S),
    "numa": Opt(Obj({"online": SN,
                     "nodes": List(Obj({"node": I, "cpulist": SN, "cpus": IN,
                                        "distances": Opt(List(I)), "memory_only?": B,
                                        "unknown?": Map(S)}))})),
    "gpudirect": Obj({"nvidia_peermem": B, "nvidia_peermem_version": SN, "nv_peer_mem": B,
                      "peermem_loaded": B, "dmabuf": S, "nvidia_fs": B}),
})

# topo text and host --------------------------------------------------------------------------

_TOPO_NODE = Obj({"command?": S, "kind": S, "legend?": Map(S), "legend_style": SN})
_HOST_NODE = Obj({"net_if": Map(Obj({"up": B, "speed_mbps": IN, "mtu": I}))})

# the model -----------------------------------------------------------------------------------

_MATRIX = Obj({"devices": List(S), "cells": List(List(SN)), "source": S, "mode?": S})
_GPU = Obj({
    "index": I, "label": S, "name": SN, "uuid": SN, "pci_bus_id": SN, "cpu_affinity": SN,
    "numa_affinity": SN, "gpu_numa_id": IN,
    "sources": Obj({f"{k}?": S for k in GPU_FACTS}),
    "extra": Obj({"nvml?": _NVML_GPU, "nvml-text?": _TEXT_GPU, "sysfs?": _SYSFS_GPU}),
})
_NIC = Obj({
    "label": S, "name": S, "pci_bus_id": SN, "numa_node": IN,
    "sources": Obj({"label": S, "name": S, "pci_bus_id?": S, "numa_node?": S}),
    "extra": Obj({"sysfs?": _HCA,
                  "affinity?": Obj({"cpu_affinity?": SN, "numa_affinity?": SN,
                                    "gpu_numa_id?": SN})}),
})
#: The model as :meth:`nvtopo.model.Topology.to_dict` writes it into a cache (no ``origin``:
#: where a file is read from is set when it is read).
MODEL = Obj({
    "schema_version": I, "nvtopo_version": S,
    "host": Obj({"hostname?": SN, "kernel?": S, "os?": S, "machine?": S, "time?": S,
                 "sysfs_root?": S, "cpu_count_logical?": I, "cpu_count_physical?": I,
                 "memory_total_bytes?": I}),
    "sources": List(S),
    "gpus": List(_GPU),
    "nics": List(_NIC),
    "matrix": Opt(_MATRIX),
    "p2p": Opt(_MATRIX),
    "nvlinks": List(Obj({"a": I, "b": I, "count": I, "source": S})),
    "notes": List(Obj({"code": S, "level": S, "message": S, "source": S, "subject?": S})),
    "disagreements": List(Obj({"subject": S, "fact": S, "values": Map(frozenset({str, int})),
                               "message": S})),
    "extra": Obj({"topo-text?": _TOPO_NODE, "nvml?": _NVML_NODE, "nvml-text?": _TEXT_NODE,
                  "sysfs?": _SYSFS_NODE, "host?": _HOST_NODE}),
})


# --- the check ------------------------------------------------------------------------------


def fits(value: Any, spec: Any = MODEL) -> bool:
    """Whether ``value`` (decoded JSON) has the shape ``spec`` describes.  Never raises: the
    walk goes no deeper than the description, however deep the value is nested."""
    return _fits(value, spec)


def _leaf_ok(v: Any, leaf: FrozenSet[type]) -> bool:
    t = type(v)
    if t not in leaf:
        return False
    # NaN and the infinities fail the comparison too
    return not (t is int or t is float) or -LIMIT <= v <= LIMIT


def _fits(v: Any, spec: Any) -> bool:
    cls = spec.__class__
    if cls is frozenset:
        return _leaf_ok(v, spec)
    if v is None:
        return spec.nullable
    if cls is Obj:
        if type(v) is not dict:
            return False
        fields = spec.fields
        for k, x in v.items():
            sub = fields.get(k)
            if sub is None:
                return False
            if sub.__class__ is frozenset:
                t = type(x)
                if t not in sub or ((t is int or t is float) and not -LIMIT <= x <= LIMIT):
                    return False
            elif not _fits(x, sub):
                return False
        return spec.required <= v.keys()
    if cls is Map:
        if type(v) is not dict or (spec.count is not None and len(v) != spec.count):
            return False
        items = v.values()
    elif type(v) is not list:
        return False
    else:
        items = v
    sub = spec.value if cls is Map else spec.item
    if sub.__class__ is frozenset:
        for x in items:
            t = type(x)
            if t not in sub or ((t is int or t is float) and not -LIMIT <= x <= LIMIT):
                return False
        return True
    for x in items:
        if not _fits(x, sub):
            return False
    return True
