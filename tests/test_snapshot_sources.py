"""Snapshots across sources: a copied sysfs tree is not mixed with this machine, and
evidence of the right shape but wrong values is a one-line error, never a traceback."""

import json
from pathlib import Path

import pytest

from nvtopo import fakesys, snapshot
from nvtopo.errors import NvtopoError
from nvtopo.probes import ProbeOptions

ROOT = Path(__file__).resolve().parents[1]


def test_foreign_sysfs_root_skips_the_probes_that_ask_this_machine(tmp_path):
    fakesys.load_file(str(ROOT / "fixtures" / "sysfs" / "dgx-h100.sysfs"), str(tmp_path))
    opts = ProbeOptions(sysfs_root=str(tmp_path))
    assert opts.foreign_root()
    doc = snapshot.take(opts)
    for name in ("topo-text", "nvml", "host"):
        assert doc["probes"][name]["status"] == "skipped", name
        assert str(tmp_path) in doc["probes"][name]["error"]
    assert doc["probes"]["sysfs"].get("status", "ok") != "skipped"
    assert doc["host"]["hostname"] is None and doc["host"]["sysfs_root"] == str(tmp_path)
    topo = snapshot.derive(json.loads(snapshot.dumps(doc)), where="s.json")
    assert topo.sources == ["sysfs"]
    assert {n.code for n in topo.notes} >= {"source.topo-text_skipped", "source.nvml_skipped"}
    assert len(topo.nics) >= 8


def test_this_machines_sysfs_is_not_foreign():
    assert not ProbeOptions(sysfs_root="/sys").foreign_root()
    assert not ProbeOptions().foreign_root()


def _doc_with(evidence):
    return {"kind": "nvtopo-snapshot", "schema_version": 1, "host": {},
            "probes": {"topo-text": evidence}}


@pytest.mark.parametrize("evidence", [
    {"status": "ok", "stdout": "GPU0 GPU1\nGPU0 X NV4\nGPU1 NV4 X\n", "error": None},
])
def test_good_evidence_derives(evidence):
    assert len(snapshot.derive(_doc_with(evidence)).gpus) == 2


def test_wrong_value_types_in_evidence_are_a_one_line_error(monkeypatch):
    from nvtopo.probes import topo as topo_text

    def broken(evidence):
        return int(evidence["stdout"])  # a derive tripping over a value of the wrong type

    monkeypatch.setattr(topo_text, "derive", broken)
    with pytest.raises(NvtopoError) as exc:
        snapshot.derive(_doc_with({"status": "ok", "stdout": "eight"}), where="bad.json")
    msg = str(exc.value)
    assert msg.startswith("bad.json: corrupt snapshot: the topo-text evidence cannot be read")
    assert "\n" not in msg
