"""The Kubernetes DaemonSet (deploy/kubernetes/nvtopo-daemonset.yaml) runs ``nvtopo watch``:
no init container, no exec loop; it asks for nothing nvtopo does not need (the Pod Security
baseline level: no hostNetwork, hostPID, hostIPC, hostPath or privilege), names the node
through the downward API, rolls out a fleet a quarter at a time, and runs a command this
nvtopo has.  The systemd unit (deploy/systemd/nvtopo-watch.service) runs the same loop.  (No
cluster runs here: the manifest's fields are checked, its container's command line is run
against this nvtopo with --dry-run, and the documents are validated by a Kubernetes schema
validator where one is installed.)"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cli_runner import make_runner
from collect_harness import skip_or_fail
from nvtopo.cli import app

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "deploy" / "kubernetes" / "nvtopo-daemonset.yaml"
UNIT = ROOT / "deploy" / "systemd" / "nvtopo-watch.service"
TEXT = MANIFEST.read_text(encoding="utf-8")
#: the manifest without its comments
LIVE = "\n".join(line for line in TEXT.splitlines() if not line.lstrip().startswith("#"))


def test_no_privilege_is_asked_for_and_baseline_is_enforced():
    for word in ("privileged: true", "hostPID", "hostIPC", "hostNetwork", "hostPath",
                 "SYS_ADMIN", "CAP_", "allowPrivilegeEscalation: true", "runAsUser: 0",
                 "nvidia.com/gpu:", "hostPort"):
        assert word not in LIVE, word
    assert "runAsNonRoot: true" in LIVE and "readOnlyRootFilesystem: true" in LIVE
    assert 'drop: ["ALL"]' in LIVE and "allowPrivilegeEscalation: false" in LIVE
    assert "pod-security.kubernetes.io/enforce: baseline" in LIVE
    assert "/sys" not in LIVE  # the container's own /sys


def test_no_init_container_and_no_exec_loop():
    assert "initContainers" not in LIVE and "signal.pause" not in LIVE
    assert "kubectl exec" not in TEXT


def test_the_api_permission_is_patching_nodes_and_their_status_only():
    rules = re.findall(r'resources: \["([^"]+)"\]\s+verbs: \[([^\]]*)\]', LIVE)
    assert rules == [("nodes", '"patch"'), ("nodes/status", '"patch"')]
    assert "kind: ClusterRoleBinding" in LIVE and "serviceAccountName: nvtopo" in LIVE


def test_a_fleet_rolls_out_a_quarter_at_a_time():
    assert re.search(r"type: RollingUpdate\s+rollingUpdate:\s+maxUnavailable: 25%", LIVE)


def test_the_node_name_comes_from_the_downward_api():
    assert re.search(r"name: NODE_NAME\s+valueFrom:\s+fieldRef:\s+fieldPath: spec\.nodeName",
                     LIVE)


def _container_args():
    m = re.search(r'args: (\["watch",[^\]]*\])', LIVE)
    assert m, "the container's arguments changed: update this test"
    return json.loads(m.group(1))


def test_the_containers_command_is_one_this_nvtopo_runs(tmp_path, monkeypatch):
    """The container's arguments, with --dry-run for --kubernetes (no API server here), one
    round, a pasted topo text for the node's probes, NODE_NAME as Kubernetes sets it."""
    from nvtopo.cli import watch as cli_watch

    monkeypatch.setattr(cli_watch, "_stop_on_signals", lambda: [])
    monkeypatch.setenv("NODE_NAME", "gpu-node-7")
    args = _container_args()
    assert args[:3] == ["watch", "--every", "10m"] and "--kubernetes" in args
    prom = tmp_path / "nvtopo.prom"
    run = [a if a != "--kubernetes" else "--dry-run" for a in args]
    run[run.index("--textfile") + 1] = str(prom)
    res = make_runner().invoke(app, run + ["--count", "1", "--from",
                                           str(ROOT / "nvtopo" / "examples" / "dgx-h100.txt")])
    assert res.exit_code == 0, res.stderr
    paths = [json.loads(x)["path"] for x in res.stdout.splitlines()]
    assert paths == ["/api/v1/nodes/gpu-node-7", "/api/v1/nodes/gpu-node-7/status"]
    assert "nvtopo_check_pass" in prom.read_text()


@pytest.mark.parametrize("version", ["1.27.0", "1.33.0", "1.37.0"])
def test_the_documents_pass_a_kubernetes_schema_validator(version):
    # optional: pip install '.[k8s-test]'; .ci/run installs it and sets
    # NVTOPO_REQUIRE_ENGINES=k8s, which makes its absence (or a missing schema) a failure
    try:
        import kubernetes_validate as kv
        import yaml
    except ImportError as exc:
        skip_or_fail("k8s", f"kubernetes-validate is not installed ({exc})")
    docs = [d for d in yaml.safe_load_all(TEXT) if d]
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "ClusterRole",
                                         "ClusterRoleBinding", "DaemonSet"]
    for d in docs:
        try:
            kv.validate(d, version, strict=True)
        except kv.SchemaNotFoundError:
            skip_or_fail("k8s", f"this kubernetes-validate has no schema for {version}")


def test_the_systemd_unit_runs_the_same_loop(tmp_path):
    text = UNIT.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith("ExecStart="))
    words = line[len("ExecStart="):].split()
    assert words[1:4] == ["watch", "--every", "10m"] and "--textfile" in words
    assert "NoNewPrivileges=yes" in text and "ProtectSystem=strict" in text
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("no systemd-analyze here: the unit's syntax is not verified")
    nvtopo = shutil.which("nvtopo") or str(Path(__import__("sys").executable).parent / "nvtopo")
    unit = tmp_path / "nvtopo-watch.service"
    unit.write_text(text.replace(words[0], nvtopo), encoding="utf-8")
    done = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_dockerfile_installs_nvtopo_and_runs_unprivileged():
    text = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    assert "pip install --no-cache-dir /src" in text
    assert "USER 65534:65534" in text and 'ENTRYPOINT ["nvtopo"]' in text
