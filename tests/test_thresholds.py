"""``--thresholds FILE`` (nvtopo/checks/thresholds.py): strict reading, one line and exit 2
for a bad file, and the precedence catalog default < layout error_thresholds < the file's
"*" < the file's class (the node's layout)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from cli_runner import make_runner

from nvtopo.checks import thresholds as T
from nvtopo.cli import app

runner = make_runner()


def _file(tmp_path: Path, doc: Any, name: str = "t.json") -> str:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return str(p)


def _counter_finding(args: List[str]) -> Optional[Dict[str, Any]]:
    r = runner.invoke(app, ["check", "--example", "dgx-h100-faulty", "--format", "json", *args])
    assert r.exit_code in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    return next((f for f in doc["findings"] if f["code"] == "ib.counter_errors"), None)


def test_default_threshold_makes_symbol_error_100_a_warning() -> None:
    f = _counter_finding([])
    assert f is not None and f["severity"] == "warning"
    # a warning at any count, an error above the limit: both said (was "<= 100" beside 100)
    assert f["expected"] == "symbol_error=0 (error above 100)"


def test_any_class_lowers_the_threshold(tmp_path: Path) -> None:
    path = _file(tmp_path, {"schema_version": 1, "classes": {"*": {"ib": {"symbol_error": 50}}}})
    f = _counter_finding(["--thresholds", path])
    assert f is not None and f["severity"] == "error"
    assert f["expected"] == "symbol_error <= 50"


def test_the_nodes_class_overrides_any_class(tmp_path: Path) -> None:
    path = _file(tmp_path, {"schema_version": 1, "classes": {
        "*": {"ib": {"symbol_error": 50}}, "dgx-h100": {"ib": {"symbol_error": 500}},
        "dgx-a100": {"ib": {"symbol_error": 1}}}})
    f = _counter_finding(["--thresholds", path])
    assert f is not None and f["severity"] == "warning"
    assert f["expected"] == "symbol_error=0 (error above 500)"


def test_the_file_overrides_the_layouts_thresholds(tmp_path: Path) -> None:
    shown = runner.invoke(app, ["layouts", "show", "dgx-h100"])
    layout = json.loads(shown.stdout)
    layout["nics"]["error_thresholds"] = {"symbol_error": 10}
    lay = _file(tmp_path, layout, "layout.json")
    f = _counter_finding(["--layout-file", lay])
    assert f is not None and f["severity"] == "error" and f["expected"] == "symbol_error <= 10"
    path = _file(tmp_path, {"schema_version": 1, "classes": {
        layout["name"]: {"ib": {"symbol_error": 1000}}}})
    f = _counter_finding(["--layout-file", lay, "--thresholds", path])
    assert f is not None and f["severity"] == "warning"
    assert f["expected"] == "symbol_error=0 (error above 1000)"


@pytest.mark.parametrize("doc,key", [
    ({"schema_version": 2, "classes": {}}, "schema_version"),
    ({"schema_version": True, "classes": {}}, "schema_version"),
    ({"schema_version": 1}, "classes"),
    ({"schema_version": 1, "classes": {}, "extra": 1}, "extra"),
    ({"schema_version": 1, "classes": []}, "classes"),
    ({"schema_version": 1, "classes": {"*": {"nvme": {}}}}, "classes.*.nvme"),
    ({"schema_version": 1, "classes": {"*": {"ib": {"symbol_eror": 1}}}},
     "classes.*.ib.symbol_eror"),
    ({"schema_version": 1, "classes": {"x": {"nvlink": {"replay": -1}}}},
     "classes.x.nvlink.replay"),
    ({"schema_version": 1, "classes": {"x": {"nvlink": {"replay": 1.5}}}},
     "classes.x.nvlink.replay"),
    ({"schema_version": 1, "classes": {"x": {"nvlink": {"replay": 2 ** 64}}}},
     "classes.x.nvlink.replay"),
    ({"schema_version": 1, "classes": {"x": {"nvlink": {"replay": False}}}},
     "classes.x.nvlink.replay"),
    ('{"schema_version": 1, "schema_version": 1, "classes": {}}', "schema_version"),
    ("[1]", "top level"),
    ("{", "not a thresholds file"),
])
def test_a_bad_file_is_one_line_naming_file_and_key_and_status_2(tmp_path: Path, doc: Any,
                                                                   key: str) -> None:
    path = _file(tmp_path, doc)
    for cmd in (["check", "--example", "dgx-h100-healthy"], ["audit", str(tmp_path)]):
        r = runner.invoke(app, [*cmd, "--thresholds", path])
        assert r.exit_code == 2, (cmd, r.stdout)
        lines = r.stderr.splitlines()
        assert len(lines) == 1, lines
        assert path in lines[0] and key in lines[0], lines[0]
        assert r.stdout == ""


def test_a_missing_file_or_a_directory_is_status_2(tmp_path: Path) -> None:
    for path in (str(tmp_path / "nope.json"), str(tmp_path)):
        r = runner.invoke(app, ["check", "--example", "dgx-h100-healthy", "--thresholds", path])
        assert r.exit_code == 2 and path in r.stderr and len(r.stderr.splitlines()) == 1


def test_the_schema_names_the_counters_of_the_catalog() -> None:
    from nvtopo.checks import catalog

    root = Path(__file__).resolve().parent.parent
    schema = json.loads((root / "docs" / "schemas" / "thresholds.schema.json").read_text())
    for family, code in catalog.THRESHOLD_CODES.items():
        names = set(schema["$defs"][family]["properties"])
        assert names == set(catalog.CATALOG[code].thresholds), family


def test_the_documented_example_is_valid() -> None:
    import re

    from nvtopo.render.catalog import THRESHOLDS_DOC

    example = re.search(r"```json\n(.*?)```", THRESHOLDS_DOC, re.S)
    assert example is not None
    t = T.parse("doc", example.group(1))
    assert t.for_class("dgx-h100") == {"ib": {"symbol_error": 50, "link_downed": 2},
                                        "nvlink": {"replay": 500, "crc_data": 10}}
    assert t.for_class("dgx-a100") == {"ib": {"symbol_error": 50}}


def test_audit_applies_the_file(tmp_path: Path) -> None:
    import gzip

    from nvtopo import examples

    with examples.path("dgx-h100-faulty") as src:
        raw = Path(src).read_bytes()
    (tmp_path / "snaps").mkdir()
    snap = tmp_path / "snaps" / "n1.json"
    snap.write_bytes(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    path = _file(tmp_path, {"schema_version": 1, "classes": {"*": {"ib": {"symbol_error": 5}}}})
    out = {}
    for extra in ([], ["--thresholds", path]):
        r = runner.invoke(app, ["audit", str(tmp_path / "snaps"), "--format", "json", "-j", "1",
                                *extra])
        assert r.exit_code == 1, r.stderr
        node = json.loads(r.stdout)["nodes"][0]
        out[bool(extra)] = next(f["severity"] for f in node["findings"]
                                if f["code"] == "ib.counter_errors")
    assert out == {False: "warning", True: "error"}


def test_a_fifo_a_device_or_an_oversized_file_is_refused_without_reading_it(
        tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for reading would block forever
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (T.MAX_BYTES + 1))
    for path, said in ((str(fifo), "not a regular file"), ("/dev/zero", "not a regular file"),
                       (str(big), "larger than")):
        r = runner.invoke(app, ["check", "--example", "dgx-h100-healthy", "--thresholds", path])
        assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1, r.stderr
        assert path in r.stderr and said in r.stderr, r.stderr
