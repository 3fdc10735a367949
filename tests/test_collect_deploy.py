"""The Kubernetes DaemonSet (deploy/kubernetes/nvtopo-daemonset.yaml) asks for nothing
nvtopo does not need, names the node through the downward API, and runs a command this
nvtopo has.  (No cluster runs here: the manifest's fields are checked, and its command
line is run against this nvtopo.)"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from cli_runner import make_runner
from nvtopo.cli import app

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "deploy" / "kubernetes" / "nvtopo-daemonset.yaml"
TEXT = MANIFEST.read_text(encoding="utf-8")
#: the manifest without its comments (the optional part is commented out)
LIVE = "\n".join(line for line in TEXT.splitlines() if not line.lstrip().startswith("#"))


def test_no_privilege_is_asked_for():
    for word in ("privileged: true", "hostPID", "hostIPC", "SYS_ADMIN", "CAP_",
                 "allowPrivilegeEscalation: true", "runAsUser: 0", "nvidia.com/gpu:"):
        assert word not in LIVE, word
    assert "runAsNonRoot: true" in LIVE and "readOnlyRootFilesystem: true" in LIVE
    assert 'drop: ["ALL"]' in LIVE and "allowPrivilegeEscalation: false" in LIVE
    assert "automountServiceAccountToken: false" in LIVE
    # /sys is the container's own (read-only for an unprivileged container): no hostPath
    assert "hostPath" not in LIVE and "/sys" not in LIVE


def test_the_node_name_comes_from_the_downward_api():
    assert re.search(r"name: NODE_NAME\s+valueFrom:\s+fieldRef:\s+fieldPath: spec\.nodeName",
                     LIVE)
    assert '"/snapshots/$(NODE_NAME).json.gz"' in LIVE


def test_the_structure_parses():
    yaml = pytest.importorskip("yaml")  # PyYAML comes with the ray extra, not the test one
    doc = yaml.safe_load(TEXT)
    assert doc["kind"] == "DaemonSet"
    spec = doc["spec"]["template"]["spec"]
    (init,) = spec["initContainers"]
    assert init["args"][0] == "snapshot"
    for c in spec["initContainers"] + spec["containers"]:
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
        assert "resources" in c and "limits" in c["resources"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["volumes"][0]["name"] == "snapshots" and "emptyDir" in spec["volumes"][0]


def test_the_snapshot_command_is_one_this_nvtopo_runs(tmp_path, monkeypatch):
    """The init container's arguments, the node name filled in as Kubernetes does, run
    against a pasted topo text (no GPU here): a gzip snapshot at the path named."""
    m = re.search(r'args: \["snapshot", "-o", "/snapshots/\$\(NODE_NAME\)\.json\.gz", '
                  r'"--timeout", "(\d+)"\]', LIVE)
    assert m, "the snapshot arguments changed: update this test"
    out = tmp_path / "gpu-node-7.json.gz"
    res = make_runner().invoke(app, ["snapshot", "-o", str(out), "--timeout", m.group(1),
                                     "--from", str(ROOT / "nvtopo" / "examples"
                                                   / "dgx-h100.txt")])
    assert res.exit_code == 0, res.stderr
    assert json.loads(gzip.decompress(out.read_bytes()))["kind"] == "nvtopo-snapshot"


def test_the_dockerfile_installs_nvtopo_and_runs_unprivileged():
    text = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    assert "pip install --no-cache-dir /src" in text
    assert "USER 65534:65534" in text and 'ENTRYPOINT ["nvtopo"]' in text
