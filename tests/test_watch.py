"""``nvtopo watch`` (docs/collect.md §3): the node-local loop, against a fake Kubernetes API
server (``http.server`` in this process, applying strategic-merge patches to one Node as the
API server does for labels and for conditions merged by type) and through ``--dry-run``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cli_runner import make_runner
from nvtopo.cli import app
from nvtopo.cli import watch as cli_watch
from nvtopo.commands import watch
from nvtopo.errors import NvtopoError
from nvtopo.layouts import load
from nvtopo.render import k8s
from nvtopo.simulate import fleet
from nvtopo.snapshot import dumps

runner = make_runner()


class _FakeApi:
    """One Node, patched as the API server patches it; ``deny``: paths answered 403."""

    def __init__(self, deny=()):
        self.node = {"metadata": {"name": "gpu-7", "labels": {"kubernetes.io/hostname": "gpu-7"}},
                     "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        self.seen = []
        self.deny = set(deny)
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_PATCH(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.seen.append((self.path, self.headers["Content-Type"],
                                 self.headers.get("Authorization"), body))
                if self.path in api.deny or not self.path.startswith("/api/v1/nodes/gpu-7"):
                    self.send_response(403 if self.path in api.deny else 404)
                    self.end_headers()
                    self.wfile.write(b'{"kind":"Status","reason":"Forbidden"}')
                    return
                api.apply(self.path, body)
                self.send_response(200)
                self.end_headers()
                self.wfile.write(json.dumps(api.node).encode())

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def apply(self, path, body):
        if path.endswith("/status"):
            conds = self.node["status"]["conditions"]
            for c in body["status"]["conditions"]:  # merged by type
                conds[:] = [x for x in conds if x["type"] != c["type"]] + [c]
        else:
            self.node["metadata"]["labels"].update(body["metadata"]["labels"])

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api():
    a = _FakeApi()
    yield a
    a.close()


@pytest.fixture
def snaps(tmp_path):
    p = fleet.plan(load("gb200-nvl72-tray"), 2, node_faults=["1:nvlink-down:GPU0:0"])
    out = []
    for i in range(2):
        path = tmp_path / f"n{i}.json"
        path.write_text(dumps(fleet.node_document(p, i)))
        out.append(str(path))
    return out


@pytest.fixture(autouse=True)
def no_signal_handlers(monkeypatch):
    monkeypatch.setattr(cli_watch, "_stop_on_signals", lambda: [])


def _condition(node):
    (c,) = [c for c in node["status"]["conditions"] if c["type"] == watch.CONDITION]
    return c


def test_labels_and_condition_reach_the_api_server(api, snaps, tmp_path):
    prom = tmp_path / "nvtopo.prom"
    res = runner.invoke(app, ["watch", "--every", "1s", "--count", "2", "--from", snaps[0],
                              "--api", api.url, "--node", "gpu-7", "--textfile", str(prom)])
    assert res.exit_code == 0, res.output
    assert [p for p, *_ in api.seen] == ["/api/v1/nodes/gpu-7", "/api/v1/nodes/gpu-7/status"] * 2
    assert {ct for _p, ct, *_ in api.seen} == {"application/strategic-merge-patch+json"}
    labels = api.node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "gpu-7"  # others' labels untouched
    assert labels["nvtopo.io/verdict"] == "pass" and labels["nvtopo.io/rails"] == "4"
    assert labels["nvtopo.io/gpu.clique"].startswith(labels["nvtopo.io/nvlink-domain"] + ".")
    for key, value in api.seen[0][3]["metadata"]["labels"].items():  # what nvtopo sent
        assert key.startswith("nvtopo.io/")
        assert k8s.label_key_problem(key) is None and k8s.label_value_problem(value) is None
    conds = api.node["status"]["conditions"]
    assert [c["type"] for c in conds] == ["Ready", watch.CONDITION]  # the kubelet's kept
    c = _condition(api.node)
    assert (c["status"], c["reason"]) == ("False", "NoErrorFindings")
    first, second = (b["status"]["conditions"][0] for p, _c, _a, b in api.seen[1::2])
    assert second["lastTransitionTime"] == first["lastTransitionTime"]  # no change, no move
    assert "nvtopo_check_pass 1" in prom.read_text()


def test_a_faulty_node_sets_the_condition_true_with_its_findings(api, snaps):
    res = runner.invoke(app, ["watch", "--every", "1s", "--count", "1", "--from", snaps[1],
                              "--api", api.url, "--node", "gpu-7"])
    assert res.exit_code == 0, res.output
    c = _condition(api.node)
    assert (c["status"], c["reason"]) == ("True", "ErrorFindings")
    assert "error finding(s): nvlink" in c["message"]
    assert api.node["metadata"]["labels"]["nvtopo.io/verdict"] == "fail"


def test_no_permission_is_one_line_and_the_loop_goes_on(snaps, tmp_path):
    a = _FakeApi(deny={"/api/v1/nodes/gpu-7/status"})
    try:
        prom = tmp_path / "n.prom"
        res = runner.invoke(app, ["watch", "--every", "1s", "--count", "1", "--from",
                                  snaps[0], "--api", a.url, "--node", "gpu-7", "--textfile",
                                  str(prom)])
    finally:
        a.close()
    assert res.exit_code == 0 and "Traceback" not in res.output
    assert "PATCH /api/v1/nodes/gpu-7/status: HTTP 403" in res.stderr
    assert prom.exists() and a.node["metadata"]["labels"]["nvtopo.io/verdict"] == "pass"


def test_dry_run_prints_the_requests_it_would_send(snaps):
    res = runner.invoke(app, ["watch", "--every", "1m", "--count", "1", "--dry-run",
                              "--from", snaps[0], "--node", "gpu-7"])
    assert res.exit_code == 0, res.output
    reqs = [json.loads(x) for x in res.stdout.splitlines()]
    assert [(r["method"], r["path"]) for r in reqs] == [
        ("PATCH", "/api/v1/nodes/gpu-7"), ("PATCH", "/api/v1/nodes/gpu-7/status")]
    assert reqs[1]["body"]["status"]["conditions"][0]["type"] == "NvtopoTopologyFault"


def test_a_bad_node_name_or_duration_is_one_line_exit_2(snaps):
    for args, word in ((["--every", "1m", "--dry-run", "--node", "GPU_7"], "--node"),
                       (["--every", "soon"], "--every"), (["--every", "0s"], "--every")):
        res = runner.invoke(app, ["watch", "--from", snaps[0], *args])
        assert res.exit_code == 2 and word in res.stderr and "Traceback" not in res.output


def test_an_unreadable_input_is_a_round_with_an_unknown_condition(api, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = runner.invoke(app, ["watch", "--every", "1s", "--count", "1", "--from", str(bad),
                              "--api", api.url, "--node", "gpu-7"])
    assert res.exit_code == 0, res.output
    c = _condition(api.node)
    assert (c["status"], c["reason"]) == ("Unknown", "NotChecked")
    assert api.node["metadata"]["labels"]["nvtopo.io/verdict"] == "unknown"


def test_in_cluster_settings_and_the_bearer_token(tmp_path, monkeypatch):
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("tok-123\n")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    got = watch.Api.in_cluster(sa_dir=str(sa))
    assert (got.base, got.token, got.cafile) == ("https://10.0.0.1:6443", "tok-123", None)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    with pytest.raises(NvtopoError):
        watch.Api.in_cluster(sa_dir=str(sa))
    a = _FakeApi()
    try:
        code, _ = watch.Api(a.url, token="tok-123").send(
            "PATCH", "/api/v1/nodes/gpu-7", "application/strategic-merge-patch+json",
            {"metadata": {"labels": {"nvtopo.io/x": "1"}}})
    finally:
        a.close()
    assert code == 200 and a.seen[0][2] == "Bearer tok-123"


@pytest.mark.parametrize("text,seconds", [("30s", 30), ("5m", 300), ("1h", 3600), ("90", 90)])
def test_durations(text, seconds):
    assert watch.parse_every(text) == seconds


def test_sigterm_between_rounds_ends_the_loop_with_0(snaps, tmp_path):
    """As a DaemonSet's pod is stopped: SIGTERM while it waits for the next round."""
    prom = tmp_path / "n.prom"
    p = subprocess.Popen([sys.executable, "-m", "nvtopo", "watch", "--every", "1h",
                          "--from", snaps[0], "--textfile", str(prom)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not prom.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert prom.exists()
        p.send_signal(signal.SIGTERM)
        assert p.wait(10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert os.path.getsize(prom) > 0
