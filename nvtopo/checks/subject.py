"""What a finding is about, typed: a GPU, one of its NVLinks, a GPU pair, a GPU's path to a
NIC, an InfiniBand/RoCE port, a NIC, an NVSwitch, the node.

A :class:`Subject` carries indices and names, never text to be parsed back: folding
(which findings a root cause explains), the SVG picture (which element to mark) and
``diff`` (which findings are new) compare subjects, so a NIC that happens to be named
``GPU3`` is never taken for the GPU.  ``str(subject)`` is the text the JSON ``subject``
field and the tables show (``GPU3``, ``GPU3 link 7``, ``GPU2-GPU6``, ``GPU0-mlx5_0``,
``mlx5_4 port 1``, ``mlx5_0``, ``node``): that text is a contract, equality is not by it.

Build subjects with the functions below (``gpu(3)``, ``link(3, 7)``, ``pair(2, 6)``,
``gpu_nic(0, "mlx5_0")``, ``port("mlx5_4", 1)``, ``nic("mlx5_0")``, ``switch(bus_id)``,
:data:`NODE`); :func:`other` is for a subject an input names in words nvtopo does not
type (a source's own subject such as ``GPU at 0000:3b:00.0``): it equals only the same
``other`` text.

Cross-node subjects (``nvtopo cluster``): ``host(name)`` (a node), ``rail(index)``,
``domain(uuid)`` (an NVLink domain), and ``fleet(text)`` for what the fleet holds that has no
type of its own (``GUID 0c42:...``, ``driver``, ``storage NICs``); none of them equals a
node's subject.
"""

from __future__ import annotations

from ..plain import field, plain
from typing import Optional, Tuple

#: Every kind of subject.
KINDS = ("gpu", "link", "pair", "gpu_nic", "port", "nic", "switch", "node", "other",
         "host", "rail", "domain", "fleet")


@plain(frozen=True)
class Subject:
    """One subject.  Which fields are set depends on ``kind``:

    ``gpu``: ``gpu``; ``link``: ``gpu``, ``link`` (the NVLink number); ``pair``: ``gpu``
    and ``peer`` (in the order written: ``GPU2-GPU6``); ``gpu_nic``: ``gpu``, ``name``
    (the NIC); ``port``: ``name`` (the device), ``port``; ``nic``: ``name``; ``switch``:
    ``name`` (the PCI bus id); ``node``: nothing; ``other``: ``name`` (the text);
    cross-node: ``host``: ``name`` (the node's name); ``rail``: ``rail`` (its rank);
    ``domain``: ``name`` (the ClusterUUID); ``fleet``: ``name`` (the text).
    """

    kind: str
    gpu: Optional[int] = None
    peer: Optional[int] = None
    link: Optional[int] = None
    port: Optional[int] = None
    name: str = ""
    #: A rail's rank (GPU *i*'s compute NIC on every node): ``rail`` subjects only.
    rail: Optional[int] = None
    #: How the model labels a GPU where that is not ``GPU<index>`` (shown, never compared).
    label: Optional[str] = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown subject kind {self.kind!r}")

    def __str__(self) -> str:
        k = self.kind
        if k == "gpu":
            return self.label if self.label else f"GPU{self.gpu}"
        if k == "link":
            return f"GPU{self.gpu} link {self.link}"
        if k == "pair":
            return f"GPU{self.gpu}-GPU{self.peer}"
        if k == "gpu_nic":
            return f"GPU{self.gpu}-{self.name}"
        if k == "port":
            return f"{self.name} port {self.port}"
        if k == "node":
            return "node"
        if k == "rail":
            return f"rail {self.rail}"
        if k == "domain":
            return f"domain {self.name}"
        return self.name  # nic, switch, other, host, fleet

    @property
    def gpus(self) -> Tuple[int, ...]:
        """The GPU indices this subject names (none for a NIC, a port, the node)."""
        if self.kind == "pair":
            return tuple(i for i in (self.gpu, self.peer) if i is not None)
        return (self.gpu,) if self.gpu is not None else ()


#: The node as a whole.
NODE = Subject("node")


def gpu(index: int, label: Optional[str] = None) -> Subject:
    """A GPU by index; ``label``: the model's label where it is not ``GPU<index>``."""
    return Subject("gpu", gpu=index, label=label if label and label != f"GPU{index}" else None)


def link(index: int, number: Optional[int]) -> Subject:
    """NVLink ``number`` of GPU ``index``."""
    return Subject("link", gpu=index, link=number)


def pair(a: int, b: int) -> Subject:
    """The GPU pair ``a``-``b``, in that order (checks write the lower index first)."""
    return Subject("pair", gpu=a, peer=b)


def gpu_nic(index: int, nic_name: str) -> Subject:
    """The PCIe path from GPU ``index`` to the NIC ``nic_name``."""
    return Subject("gpu_nic", gpu=index, name=nic_name)


def port(device: str, number: Optional[int]) -> Subject:
    """Port ``number`` of the RDMA device ``device``."""
    return Subject("port", name=device, port=number)


def nic(name: str) -> Subject:
    """A NIC (an RDMA device) by name."""
    return Subject("nic", name=name)


def switch(bus_id: str) -> Subject:
    """An NVSwitch by PCI bus id."""
    return Subject("switch", name=bus_id)


def other(text: str) -> Subject:
    """A subject nvtopo does not type (a source's own words); equal only to the same text."""
    return Subject("other", name=text)


def host(name: str) -> Subject:
    """A node of the fleet, by its name (``nvtopo cluster``)."""
    return Subject("host", name=name)


def rail(rank: int) -> Subject:
    """Rail ``rank``: GPU ``rank``'s compute NIC on every node."""
    return Subject("rail", rail=rank)


def domain(uuid: str) -> Subject:
    """An NVLink domain, by its ClusterUUID."""
    return Subject("domain", name=uuid)


def fleet(text: str) -> Subject:
    """What the fleet holds in words nvtopo does not type (a GUID, a version, a key)."""
    return Subject("fleet", name=text)
