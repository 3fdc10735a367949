"""``nvtopo simulate`` records NVML in plain Python exactly as the live capture records it.

The simulator answers the NVML probe's own walker from a machine's call table
(:mod:`nvtopo.simulate.nvml_record`), with no pynvml involved.  The live capture asks the
real pynvml wrappers, here over the fake NVML C library (``fake_nvml_lib``).  For every
bundled layout, healthy and with each fault that reaches NVML, and for every fixture
machine (lost GPUs, missing library, MIG, ...), both recordings must hold the same calls,
the same answers, in the same order, with the same ``ncalls`` and status; only the
duration and the library description differ.
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Dict, List

import fake_nvml_lib
import nvml_fake
import pynvml
import pytest

from nvtopo import layouts
from nvtopo.probes import nvml
from nvtopo.simulate import build, nvml_record, simulate, sources
from nvtopo.simulate.faults import KINDS

LAYOUTS = layouts.names()
#: Fault kinds that change what NVML answers; the others change only sysfs (checked below).
NVML_KINDS = ("nvlink-down", "nvlink-degraded", "gpu-missing", "pcie-width", "pcie-gen",
              "fabric-not-started", "c2c-down", "c2c-links")
#: This wheel reads GPU fabric info as the newest struct, as the simulator answers it.
V3 = hasattr(pynvml, "c_nvmlGpuFabricInfo_v3_t")


def comparable(ev: Dict[str, Any]) -> Dict[str, Any]:
    """The evidence less what is about the process that recorded it (its duration, which
    library answered)."""
    out = {k: v for k, v in ev.items() if k not in ("duration_s", "library")}
    if not V3:  # an older wheel reads the v2 struct: compare the members both read
        calls = {}
        for k, rec in out["calls"].items():
            if k.startswith("nvmlDeviceGetGpuFabricInfoV(") and isinstance(rec.get("value"), dict):
                rec = {"value": {m: v for m, v in rec["value"].items()
                                 if m not in ("struct", "healthSummary")}}
            calls[k] = rec
        out["calls"] = calls
    return out


def assert_same_recording(desc: Dict[str, Any]) -> Dict[str, Any]:
    simulated = nvml_record.record(copy.deepcopy(desc))
    live = fake_nvml_lib.record(copy.deepcopy(desc))
    a, b = comparable(simulated), comparable(live)
    assert list(a["calls"]) == list(b["calls"]), "the same calls in the same order"
    for key in a["calls"]:
        assert a["calls"][key] == b["calls"][key], key
    assert a == b
    return simulated


@functools.lru_cache(maxsize=None)
def _machine(name: str):
    return build(layouts.load(name), [], seed=1)


def nvml_faults(name: str) -> List[str]:
    """One spec of each NVML fault kind that applies to a healthy node of the layout."""
    m = _machine(name)
    gpus = sorted(m.gpus, key=lambda g: g.ident)
    out = []
    linked = [g for g in gpus if g.links]
    if linked:
        g = linked[len(linked) // 2]
        out.append(f"nvlink-down:GPU{g.ident}:{g.links[-1].index}")
    pairs = [(a, b) for a in gpus for b in gpus
             if a.ident < b.ident and m.topo_pair_count(a, b) > 0]
    if pairs:
        a, b = pairs[-1]
        out.append(f"nvlink-degraded:GPU{a.ident}-GPU{b.ident}")
    if len(gpus) > 1:
        out.append(f"gpu-missing:GPU{gpus[-1].ident}")
    g = gpus[0]
    out.append(f"pcie-width:GPU{g.ident}:{g.pcie_max_width // 2}")
    out.append(f"pcie-gen:GPU{g.ident}:{g.pcie_max_gen - 1}")
    if m.nvswitch:
        out.append("fabric-not-started")
    if g.c2c_links:  # Grace superchips: NVLink-C2C
        out.append(f"c2c-down:GPU{g.ident}")
        out.append(f"c2c-links:GPU{gpus[-1].ident}:{g.c2c_links // 2}")
    return out


CASES = [(name, None) for name in LAYOUTS] + [
    (name, spec) for name in LAYOUTS for spec in nvml_faults(name)]


@pytest.mark.parametrize("name,spec", CASES, ids=[f"{n}+{s}" if s else n for n, s in CASES])
def test_simulated_recording_equals_the_live_capture_through_pynvml(name, spec):
    m = build(layouts.load(name), [spec] if spec else [], seed=1)
    ev = assert_same_recording(sources.nvml_description(m))
    assert ev["status"] == "ok" and ev["ncalls"] > 100
    assert ev["calls"]["nvmlDeviceGetCount()"] == {"value": len(m.gpus)}


def test_every_nvml_fault_kind_is_covered_on_some_layout():
    assert {spec.partition(":")[0] for _, spec in CASES if spec} == set(NVML_KINDS)
    assert set(NVML_KINDS) <= set(KINDS)


def test_the_other_fault_kinds_leave_the_nvml_answers_alone():
    """What NVML_KINDS leaves out must not reach NVML (else it belongs in the list)."""
    healthy = sources.nvml_description(build(layouts.load("dgx-h100"), [], seed=1))
    for spec in ("ib-port-down:mlx5_4", "ib-rate:mlx5_5:200", "counters:mlx5_6:symbol_error=7",
                 "nic-affinity-swap:mlx5_0:mlx5_3", "nic-rename:mlx5_0:ibp12s0", "nic-far:mlx5_3",
                 "peermem-missing", "nvme-far:3", "nvme-bunched:3", "nvme-missing:5", "iommu-on",
                 "no-nvidia-fs"):
        assert spec.partition(":")[0] not in NVML_KINDS
        m = build(layouts.load("dgx-h100"), [spec], seed=1)
        assert sources.nvml_description(m) == healthy, spec
    assert set(KINDS) - set(NVML_KINDS) == {"ib-port-down", "ib-rate", "counters",
                                            "nic-affinity-swap", "nic-rename", "nic-far",
                                            "peermem-missing", "nvme-far", "nvme-bunched",
                                            "nvme-missing", "iommu-on", "no-nvidia-fs"}


@pytest.mark.parametrize("machine", [m for m in nvml_fake.machines()
                                     if not nvml_fake.load_machine(m).get("hang")])
def test_fixture_machines_record_the_same_both_ways(machine):
    """Lost GPUs, no library, no driver, MIG, bridges: the stateful answers agree too."""
    ev = assert_same_recording(nvml_fake.load_machine(machine))
    assert ev["status"] in ("ok", "unavailable")


def test_answers_past_a_c_type_or_unknown_to_nvml_come_back_as_through_pynvml():
    """Values cut to their C width, text cut at a NUL, a double field, a negative int,
    an error name NVML does not have, an unanswered call, a glob: as the wrappers give them."""
    desc = nvml_fake.load_machine("dgx-h100")
    desc["calls"] = {
        "nvmlDeviceGetFieldValues(gpu0,94:0)": {"value": 2**33 + 5},
        "nvmlDeviceGetMinorNumber(gpu1)": {"value": 2**32 + 7},
        "nvmlDeviceGetSerial(gpu2)": {"value": "1650\u0000tail"},
        "nvmlDeviceGetFieldValues(gpu3,164:0)": {"value": 25.5, "type": 0},
        "nvmlDeviceGetNumaNodeId(gpu4)": {"value": -1},
        "nvmlDeviceGetArchitecture(gpu5)": {"error": "NoSuchNvmlError"},
        "nvmlDeviceGetNvLinkErrorCounter(gpu6,*)": {"error": "NotSupported"},
        "nvmlDeviceGetFieldValues(gpu7,163:2)": {"value": 2**64 + 3},
    }
    ev = assert_same_recording(desc)
    calls = ev["calls"]
    assert calls["nvmlDeviceGetFieldValues(gpu0,94:0)"] == {"value": 5}
    assert calls["nvmlDeviceGetMinorNumber(gpu1)"] == {"value": 7}
    assert calls["nvmlDeviceGetSerial(gpu2)"] == {"value": "1650"}
    assert calls["nvmlDeviceGetNumaNodeId(gpu4)"] == {"value": -1}
    assert calls["nvmlDeviceGetArchitecture(gpu5)"] == {"error": "Unknown", "code": 999}
    assert calls["nvmlDeviceGetFieldValues(gpu7,163:2)"] == {"value": 3}


def test_simulate_uses_the_plain_python_recording_and_keeps_its_label():
    doc = simulate(layouts.load("dgx-station-v100"), [], seed=0)
    ev = doc["probes"]["nvml"]
    again = nvml_record.record(sources.nvml_description(build(layouts.load("dgx-station-v100"),
                                                              [], seed=0)))
    assert comparable(ev) == comparable(again)
    assert ev["duration_s"] == 0.0 and ev["timeout_s"] == nvml_record.TIMEOUT
    assert ev["library"] == {"module": "pynvml", "file": None,
                             "simulated": "nvtopo.simulate.fake_nvml"}
    topo = nvml.derive(ev)
    assert len(topo.gpus) == 4 and topo.nvml.to_dict()["incomplete"] is None
