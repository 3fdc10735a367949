"""Typed layouts and the typed selection (issue 22, item 1): the checks read attributes of a
typed layout and of the :class:`~nvtopo.checks.select.Selection`, never dotted strings or a
layout's ``extra`` map; a layout document decodes strictly, with errors naming the path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nvtopo import layouts
from nvtopo.checks import select as S
from nvtopo.errors import NvtopoError

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ROOT / "nvtopo" / "checks"

#: what reading a layout by dotted string or through ``extra`` looks like
_SECTIONS = "gpus|nvlink|nics|numa|c2c|storage|selection|domain"
FORBIDDEN = [
    (re.compile(r'\.get\(\s*["\'](?:' + _SECTIONS + r')\.'), "dotted layout lookup"),
    (re.compile(r"\.extra\b(?![\"'])"), "a layout's extra map"),  # (not the code "gpu.extra")
    (re.compile(r"\.section\("), "layout.section()"),
    (re.compile(r"inferred_only\("), "inferred_only() by dotted path"),
]


def test_no_dotted_layout_lookup_or_extra_read_in_checks():
    bad = []
    for path in sorted(CHECKS.glob("*.py")):
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            for rx, what in FORBIDDEN:
                if rx.search(code):
                    bad.append(f"{path.name}:{no}: {what}: {line.strip()}")
    assert bad == []


def test_the_scan_finds_what_it_forbids():
    """The patterns above match the old forms (a scan that matches nothing proves nothing)."""
    old = ['n = layout.get("gpus.count")', "x = layout.extra.get('mapping')",
           'nv = layout.section("nvlink")', 'layout.inferred_only("numa")']
    assert all(any(rx.search(line) for rx, _ in FORBIDDEN) for line in old)
    assert not any(rx.search("n = layout.gpus.count") for rx, _ in FORBIDDEN)


def test_sections_decode_to_typed_values():
    lay = layouts.load("dgx-h100")
    assert lay.gpus.count == 8 and lay.gpus.pcie.gen == 5
    assert lay.nics.placement.port_map[1] == ["mlx5_3"]
    assert lay.numa.gpu_node == {i: (0 if i < 4 else 1) for i in range(8)}
    assert lay.nvlink.pairs is None and lay.nvlink.pair_map() == {}
    assert lay.storage.gds is not None and lay.storage.gds.data_path == "PXB"
    assert lay.storage.inferred("gds") and not lay.storage.inferred()
    assert lay.nics.inferred("placement") is False  # "[S: ...; I for PIX]": a value, not all
    assert lay.nics.placement.inferred("gpu_to_nearest_compute_nic") is False
    mesh = layouts.load("dgx-1-v100")
    assert mesh.nvlink.pair_map()[(0, 3)] == 2
    # a section the document leaves out reads as empty, not None
    assert not lay.c2c.stated and lay.c2c.enabled is None
    assert layouts.load("gb200-nvl72-tray").domain.nodes == 18
    assert layouts.domain_nodes("gb200-nvl72-tray") == 18
    assert layouts.domain_nodes("gb300-nvl72-tray") == 18
    assert layouts.domain_nodes("dgx-h100") is None and layouts.domain_nodes("nosuch") is None


@pytest.mark.parametrize("doc,where", [
    ({"nics": {"compute": {"rate_gbps": "400"}}}, "$.nics.compute.rate_gbps: expected"),
    ({"nics": {"compute": {"speed": 400}}}, "$.nics.compute.speed: no such key"),
    ({"gpus": {"count": 10 ** 9}}, "$.gpus.count: must be an integer from 0 to"),
    ({"nvlink": {"pairs": {"0-1": 2, "1-0": 2}}}, '$.nvlink.pairs["1-0"]: states the pair'),
    ({"numa": {"gpu_numa": {"0": 5000}}}, '$.numa.gpu_numa["0"]: must map'),
    ({"gpus": {"name_pattern": "H100("}}, "$.gpus.name_pattern: not a valid regular"),
    ({"domain": {"nodes": "18"}}, "$.domain.nodes: expected"),
])
def test_bad_layouts_are_refused_naming_the_path(doc, where):
    text = json.dumps(dict({"schema": 1, "name": "mine"}, **doc))
    with pytest.raises(NvtopoError) as exc:
        layouts.parse(text, where="mine.json")
    msg = str(exc.value)
    assert msg.startswith("mine.json: bad layout: ") and where in msg and "\n" not in msg


def _mesh_topo(perm):
    from nvtopo.model import GPU, Matrix, Topology

    pairs = layouts.load("dgx-1-v100").nvlink.pair_map()
    n = 8
    cells = [["SYS"] * n for _ in range(n)]
    for i in range(n):
        cells[i][i] = "X"
    for (a, b), c in pairs.items():
        cells[perm[a]][perm[b]] = cells[perm[b]][perm[a]] = f"NV{c}"
    return Topology(gpus=[GPU(i) for i in range(n)], sources=["topo-text"],
                    matrix=Matrix([f"GPU{i}" for i in range(n)], cells))


def test_selection_is_typed_and_remap_renumbers_the_typed_layout():
    perm = [3, 6, 0, 5, 1, 7, 2, 4]
    sel = S.select(_mesh_topo(perm))
    assert sel.how in ("auto", "ambiguous") and sel.mapping is not None
    assert all(sel.mapping[perm[i]] == i for i in range(8))
    orig = layouts.load(sel.name).nvlink.pair_map()
    got = sel.layout.nvlink.pair_map()
    assert got == {tuple(sorted((perm[a], perm[b]))): c for (a, b), c in orig.items()}
    # the bundled layout itself is not changed by renumbering
    assert layouts.load(sel.name).nvlink.pair_map() == orig
    named = S.select(_mesh_topo(perm), sel.name)
    assert named.how == "user" and named.reason.startswith(f"--layout {sel.name}")


def test_an_ambiguous_pick_lists_every_equal_fit():
    from nvtopo.model import GPU, Matrix, Topology

    n = 8
    cells = [["NV18"] * n for _ in range(n)]
    for i in range(n):
        cells[i][i] = "X"
    topo = Topology(gpus=[GPU(i) for i in range(n)], sources=["topo-text"],
                    matrix=Matrix([f"GPU{i}" for i in range(n)], cells))
    sel = S.select(topo)
    assert sel.how == "ambiguous" and len(sel.ties) >= 2 and sel.ties[0] == sel.name
    assert all(t in sel.reason for t in sel.ties)


def test_no_fit_is_none():
    from nvtopo.model import GPU, Topology

    sel = S.select(Topology(gpus=[GPU(i) for i in range(3)], sources=["topo-text"]))
    assert sel.layout is None and sel.how == "none" and sel.name == "none"
