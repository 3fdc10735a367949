"""The cluster family's finding codes (``nvtopo cluster``: checks across a fleet), as rows
of the one catalog (:mod:`.catalog` builds them; kept apart only for the size of that
module).  Severity ladders are written as ``(observed, inferred)`` pairs, which the catalog
turns into its ``Ladder``; this module imports nothing from it."""

from __future__ import annotations

from typing import Any, Tuple

_SURE = ("error", "warning")
_ERROR = ("error", "error")
_WARN = ("warning", "warning")
_INFO = ("info", "info")

#: code, family, scope, meaning, evidence, ladder, action, subject (as in the catalog)
CLUSTER_ROWS: Tuple[Tuple[Any, ...], ...] = (
    ("cluster.unreadable", "cluster", "cluster", "files that could not be read; the rest is "
     "still compared", "the input files", _WARN, "re-take the snapshots named",
     "snapshots"),
    ("cluster.fabric_incomplete", "cluster", "cluster", "a node's fabric not completed, not "
     "successful, a zero ClusterUUID or clique 0: the node is in no domain", "each node's "
     "NVML fabric info", _ERROR, "check nvidia-fabricmanager on the nodes named",
     "fabric not completed"),
    ("cluster.node_split", "cluster", "cluster", "one node's GPUs report several domains or "
     "cliques", "each node's NVML fabric info", _ERROR, "check the node's NVLink partition",
     "node-003"),
    ("cluster.domain_oversize", "cluster", "cluster", "more nodes report one ClusterUUID "
     "than the layout's domain holds", "NVML fabric info, the layout's domain", _ERROR,
     "check the NVLink partitions", "domain 1b2c"),
    ("cluster.domain_incomplete", "cluster", "cluster", "fewer nodes in a domain than the "
     "layout's (a tray outside its rack, a rack split, or trays not collected)",
     "NVML fabric info, the layout's domain", _WARN, "collect every tray of the rack",
     "domain 1b2c"),
    ("cluster.domain_cliques", "cluster", "cluster", "one domain partitioned into several "
     "cliques", "NVML fabric info", _WARN, "check the partition is by design",
     "domain 1b2c"),
    ("cluster.rack_slots", "cluster", "cluster", "two trays of one chassis in one slot "
     "(error), or fewer trays than the rack holds", "NVML platform info, the layout's domain",
     _SURE, "nvidia-smi -q (Platform Info) on the trays; collect every tray", "rack 1821325"),
    ("cluster.rack_domain_mismatch", "cluster", "cluster", "trays of one chassis in different "
     "NVLink domains", "NVML platform and fabric info", _ERROR, "check the fabric manager's "
     "partition and the tray's NVLink cables", "rack 1821325"),
    ("cluster.imex_views_differ", "cluster", "cluster", "trays of one rack see its IMEX "
     "domain differently: one UP while another DOWN or DEGRADED, or other member lists",
     "each tray's nvidia-imex-ctl -N view (error where taken within 5 minutes of each "
     "other)", _SURE, "nvidia-imex-ctl -N on each tray; one "
     "nodes_config.cfg per rack", "rack 1821325"),
    ("cluster.imex_one_way", "cluster", "cluster", "an IMEX connection up one way only: one "
     "tray sees another not connected while that one sees it connected", "each tray's own "
     "row of the IMEX connection matrix (error where taken within 5 minutes of each other)",
     _SURE, "check the IMEX port between the two trays",
     "rack 1821325"),
    ("cluster.rail_mismatch", "cluster", "cluster", "per rank, a minority link layer or rate "
     "among nodes of one layout", "each node's compute ports", _ERROR, "check the nodes "
     "named against the majority", "rail 0"),
    ("cluster.rail_down", "cluster", "cluster", "per rank, a minority port state", "each "
     "node's compute ports", _WARN, "check the port (nvtopo check on the node)", "rail 0"),
    ("cluster.rail_subnet", "cluster", "cluster", "per InfiniBand rank, a minority subnet "
     "prefix and SM LID", "each node's compute ports", _WARN, "check the subnet manager "
     "and cabling of the nodes named", "rail 0"),
    ("cluster.duplicate_guid", "cluster", "cluster", "one node or port GUID on devices of "
     "two nodes", "each node's HCA GUIDs", _ERROR, "re-flash or replace the card",
     "GUID 0c42:a103:0012:3456"),
    ("cluster.duplicate_lid", "cluster", "cluster", "one unicast LID twice in one subnet",
     "each node's port LIDs", _ERROR, "check the subnet manager", "LID 12 on fe80::"),
    ("cluster.storage_on_rail", "cluster", "cluster", "a non-compute InfiniBand NIC on a "
     "compute rail's subnet", "port roles, subnet prefixes", _WARN, "check the cabling of "
     "the storage NICs", "storage NICs"),
    ("cluster.skew_in_domain", "cluster", "cluster", "inside one NVLink domain, a minority "
     "driver or CUDA driver version", "each node's versions", _ERROR, "install one driver "
     "across the domain", "domain 1b2c"),
    ("cluster.version_skew", "cluster", "cluster", "across the fleet, a minority driver, CUDA, "
     "kernel, nvtopo or NIC firmware version", "each node's versions", _WARN, "align the "
     "versions of the nodes named", "driver"),
    ("cluster.odd_node", "cluster", "cluster", "a node whose GPU count, NVLink pairs, PCIe "
     "widths, NUMA or compute NICs differ from the majority of its layout", "each node's "
     "facts", _WARN, "run nvtopo check on the node named", "node-007"),
    ("cluster.duplicate_hostname", "cluster", "cluster", "one hostname in several snapshots",
     "each snapshot's hostname", _ERROR, "rename the node, or drop the duplicate snapshot",
     "node-001"),
    ("cluster.duplicate_gpu_uuid", "cluster", "cluster", "one GPU UUID on several nodes (or "
     "one snapshot read twice)", "each node's GPU UUIDs", _ERROR, "drop the duplicate "
     "snapshot", "GPU-1a2b"),
    ("cluster.engine_name", "cluster", "cluster", "nodes whose engine node name is not "
     "their hostname", "collect.json, hostnames", _WARN, "check the scheduler's node names",
     "engine names"),
    ("cluster.mesh_node_missing", "cluster", "cluster", "a node missing from the WireGuard "
     "peer lists of two or more nodes (error where it lists them)", "each node's wg peers",
     _SURE, "add the node's public key to the others' peers", "node-004"),
    ("cluster.mesh_peer_missing", "cluster", "cluster", "a WireGuard peer missing on one "
     "side (error) or both (warning)", "each node's wg peers", _SURE, "add the missing "
     "nodes' public keys", "node-004"),
    ("cluster.mesh_no_interface", "cluster", "cluster", "a node with no WireGuard interface "
     "while most nodes are meshed", "each node's class/net", _SURE, "bring up the node's "
     "tunnel", "node-004"),
    ("cluster.mesh_membership_unknown", "cluster", "cluster", "nodes whose WireGuard "
     "membership cannot be judged", "each node's class/net", _INFO, "wg show interfaces "
     "on the node", "mesh membership"),
    ("cluster.mesh_unknown_peer", "cluster", "cluster", "a peer key that matches no node in "
     "the view", "each node's wg peers", _WARN, "remove the stale key or add its node's "
     "snapshot", "peer ab12cd34"),
    ("cluster.mesh_duplicate_key", "cluster", "cluster", "one WireGuard public key on two "
     "nodes (a cloned image)", "each node's wg key", _ERROR, "re-key one of the nodes",
     "key ab12cd34"),
    ("cluster.mesh_mtu", "cluster", "cluster", "a node whose tunnel MTU differs from the "
     "majority's", "each node's tunnel MTU", _WARN, "set one MTU across the mesh",
     "node-004"),
    ("cluster.mesh_not_checked", "cluster", "cluster", "nodes whose peers or key are unknown "
     "(wg not permitted): left out", "each node's wg dump", _INFO, "run the snapshot as root",
     "mesh"),
)
