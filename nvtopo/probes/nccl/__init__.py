"""NCCL's own output, read from pasted text; nothing is captured live (``docs/nccl.md``).

* :mod:`~nvtopo.probes.nccl.log`: ``NCCL_DEBUG=INFO`` logs (source ``nccl-log``);
* :mod:`~nvtopo.probes.nccl.perf`: nccl-tests tables (source ``nccl-tests``);
* :mod:`~nvtopo.probes.nccl.topo_xml`: NCCL's topology XML (source ``nccl-topo``).
"""
