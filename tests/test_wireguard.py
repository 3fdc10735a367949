"""The WireGuard mesh on one node: sysfs class/net, the wireguard probe (a fake ``wg``,
tests/fake_wg.py), the ``mesh`` check family (docs/mesh.md)."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from nvtopo import fakesys
from nvtopo.checks import mesh as mesh_check
from nvtopo.probes import ProbeOptions, sysfs, wireguard
from nvtopo.snapshot.document import derive

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "sysfs"
sys.path.insert(0, str(HERE))
import fake_wg  # noqa: E402

K1 = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="
K2 = "TrMvSoP4jYQlY6RIzBgbssQqY3vxI2Pi+y71lOWWXX0="
K3 = "gN65BkIKy1eCE9pP1wdc8ROUtkHLF2PfAqYdyYBz6EA="
#: /proc/net/route: default via eth0, 10.0.0.0/16 on eth0, the mesh 10.100.0.0/24 on wg0.
ROUTE = ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
         "eth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
         "eth0\t0000000A\t00000000\t0001\t0\t0\t100\t0000FFFF\t0\t0\t0\n"
         "wg0\t0000640A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
HEALTHY_PEERS = [[K1, "10.0.1.2:51820", "10.100.0.2/32", 30, 25],
                 [K2, "10.0.1.3:51820", "10.100.0.3/32", 100, 25],
                 [K3, "10.0.1.4:51820", "10.100.0.4/32 192.168.4.0/24", 5, 25]]


@pytest.fixture
def wg_env(tmp_path, monkeypatch):
    """A fake wg on PATH (logging its argv) and a route file; returns a runner."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    prog = bindir / "wg"
    prog.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(HERE)!r})\n"
                    "import fake_wg\nsys.exit(fake_wg.main(sys.argv[1:]))\n")
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "argv.log"
    monkeypatch.setenv("PATH", str(bindir) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("FAKE_WG_LOG", str(log))
    route = tmp_path / "route"
    route.write_text(ROUTE)

    def take(tree="wireguard-healthy", peers=HEALTHY_PEERS, mode="healthy", route_text=None):
        root = tmp_path / tree
        if not root.exists():
            fakesys.load_file(str(FIXTURES / f"{tree}.sysfs"), str(root))
        if route_text is not None:
            route.write_text(route_text)
        monkeypatch.setenv("FAKE_WG_MODE", mode)
        monkeypatch.setenv("FAKE_WG_PEERS", json.dumps(peers))
        wg = wireguard.capture(ProbeOptions(timeout=20), sys_root=str(root),
                               route_path=str(route))
        sf = sysfs.capture(ProbeOptions(sysfs_root=str(root)))
        doc = {"kind": "nvtopo-snapshot", "schema_version": 1, "nvtopo_version": "0",
               "host": {}, "probes": {"sysfs": sf, "wireguard": wg}}
        return doc, derive(doc)

    take.log = log
    return take


def _calls(log):
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _codes(topo, severity=None):
    return sorted(f.code for f in mesh_check.check(topo, None)
                  if severity is None or f.severity == severity)


def test_never_asks_for_a_secret_and_keeps_none(wg_env):
    doc, topo = wg_env()
    calls = _calls(wg_env.log)
    assert calls, "wg was not run"
    for argv in calls:
        assert len(argv) == 3 and argv[0] == "show" and argv[1] == "wg0", argv
        assert argv[2] in wireguard.FIELDS and argv[2] not in wireguard.FORBIDDEN, argv
    assert {a[2] for a in calls} == set(wireguard.FIELDS)
    text = json.dumps(doc) + json.dumps(topo.to_dict())
    assert fake_wg.PRIVATE not in text and fake_wg.PSK not in text
    assert fake_wg.OWN_PUBLIC in text and K1 in text  # public keys are kept


def test_the_fake_prints_a_secret_for_forbidden_calls(capsys):
    """The guard above can fail: the fake does print the key where the real tool would."""
    for argv in (["show", "wg0", "dump"], ["show", "wg0", "private-key"], ["show", "wg0"],
                 ["show"], ["show", "wg0", "preshared-keys"]):
        fake_wg.main(argv)
        assert fake_wg.PRIVATE in capsys.readouterr().out


def test_healthy_peers_parsed_and_clean(wg_env):
    doc, topo = wg_env()
    dev = topo.wireguard.interfaces["wg0"]
    assert dev.status == "ok" and dev.public_key == fake_wg.OWN_PUBLIC
    assert dev.listen_port == 51820
    assert [p.public_key for p in dev.peers] == [K1, K2, K3]
    p3 = dev.peers[2]
    assert p3.endpoint == "10.0.1.4:51820"
    assert p3.allowed_ips == ["10.100.0.4/32", "192.168.4.0/24"]
    assert p3.keepalive_s == 25 and (p3.rx_bytes, p3.tx_bytes) == (123456, 654321)
    age = topo.wireguard.captured_at - dev.peers[1].latest_handshake
    assert 100 <= age <= 110
    assert dev.underlay == "eth0" and dev.underlay_family == "ipv4"
    assert dev.underlay_by.startswith("the route to its peers' endpoints")
    link = topo.sysfs.net["wg0"]
    assert link.wireguard and link.mtu == 1420 and link.type == 65534
    assert link.counters["rx_errors"] == 0 and link.counters["rx_bytes"] == 918273645
    assert topo.sysfs.net["eth0"].mtu == 1500 and topo.sysfs.net["eth0"].numa_node == 0
    found = mesh_check.check(topo, None)
    assert [f.code for f in found] == ["mesh.sockets_only"]
    assert found[0].severity == "info"


def test_allowed_ips_split_on_spaces_or_commas():
    ev = {"status": "ok", "captured_at": 1000, "interfaces": {"wg0": {
        "status": "ok", "error": None, "fields": {
            "peers": f"{K1}\n{K2}\n",
            "allowed-ips": f"{K1}\t10.1.0.0/16 fd00::/64\n{K2}\t10.2.0.1/32, 10.3.0.0/24\n"}}}}
    peers = wireguard.derive(ev).wireguard.interfaces["wg0"].peers
    assert [p.allowed_ips for p in peers] == [["10.1.0.0/16", "fd00::/64"],
                                              ["10.2.0.1/32", "10.3.0.0/24"]]


@pytest.mark.parametrize("keepalive,severity", [(25, "error"), (None, "warning")])
def test_one_stale_peer(wg_env, keepalive, severity):
    peers = [list(p) for p in HEALTHY_PEERS]
    peers[1][3], peers[1][4] = 600, keepalive
    doc, topo = wg_env(peers=peers)
    found = [f for f in mesh_check.check(topo, None) if f.code == "mesh.peer_stale"]
    assert len(found) == 1 and found[0].severity == severity
    assert K2 in found[0].message and found[0].actual.endswith(" s ago")
    assert 600 <= int(found[0].actual.split()[0]) <= 605


def test_never_handshaken_peer(wg_env):
    peers = [list(p) for p in HEALTHY_PEERS]
    peers[0][3] = None
    doc, topo = wg_env(peers=peers)
    assert topo.wireguard.interfaces["wg0"].peers[0].latest_handshake == 0
    found = [f for f in mesh_check.check(topo, None) if f.code == "mesh.peer_stale"]
    assert len(found) == 1 and found[0].actual == "never" and found[0].severity == "error"


def test_every_peer_stale_is_one_finding(wg_env):
    peers = [[k, ep, ips, 900, 25] for k, ep, ips, _, _ in HEALTHY_PEERS]
    doc, topo = wg_env(peers=peers)
    found = [f for f in mesh_check.check(topo, None) if f.severity != "info"]
    assert [(f.code, f.severity, str(f.subject)) for f in found] == [
        ("mesh.peers_stale", "error", "wg0")]


def test_verdict_is_the_same_tomorrow(wg_env, monkeypatch):
    peers = [list(p) for p in HEALTHY_PEERS]
    peers[1][3] = 600
    doc, topo = wg_env(peers=peers)
    before = [f.to_dict() for f in mesh_check.check(topo, None)]
    later = time.time() + 86400
    monkeypatch.setattr(time, "time", lambda: later)
    again = derive(json.loads(json.dumps(doc)))
    assert [f.to_dict() for f in mesh_check.check(again, None)] == before
    assert sum(f["code"] == "mesh.peer_stale" for f in before) == 1


def test_not_permitted_is_not_checked_never_a_pass(wg_env):
    doc, topo = wg_env(mode="eperm")
    dev = topo.wireguard.interfaces["wg0"]
    assert dev.status == "not permitted" and dev.peers is None
    assert "Operation not permitted" in dev.error
    found = mesh_check.check(topo, None)
    nc = [f for f in found if f.code == "mesh.peers_not_checked"]
    assert len(nc) == 1 and nc[0].severity == "info" and nc[0].actual == "not permitted"
    assert "CAP_NET_ADMIN" in nc[0].message
    assert topo.to_dict()["extra"]["wireguard"]["interfaces"]["wg0"]["peers"] is None
    assert len(_calls(wg_env.log)) == 1  # stopped at the first refusal


def test_no_wg_program(wg_env, monkeypatch):
    monkeypatch.setattr(wireguard, "WG", "nvtopo-no-such-wg")
    doc, topo = wg_env()
    dev = topo.wireguard.interfaces["wg0"]
    assert dev.status == "missing" and dev.peers is None
    assert "mesh.peers_not_checked" in _codes(topo, "info")


def test_no_wireguard_interface_runs_nothing(wg_env):
    doc, topo = wg_env(tree="dgx-h100")
    assert doc["probes"]["wireguard"]["status"] == "absent"
    assert _calls(wg_env.log) == []
    assert topo.wireguard is None and topo.sysfs.net is None
    assert "wireguard" not in topo.sources
    assert mesh_check.check(topo, None) == []
    assert "net" not in topo.to_dict()["extra"]["sysfs"]


def test_mtu_over_the_underlay_by_endpoint_route_is_an_error(wg_env):
    doc, topo = wg_env(tree="wireguard-faulty")
    found = {f.code: f for f in mesh_check.check(topo, None)}
    f = found["mesh.mtu"]
    assert f.severity == "error" and f.actual == 1500 and f.expected == "<= 1440"
    assert "1500 + 60" in f.message and "eth0" in f.message
    assert found["mesh.errors"].actual == {"rx_errors": 7}
    assert found["mesh.drops"].actual == {"tx_dropped": 3}
    assert found["mesh.errors"].severity == "warning"


def test_mtu_by_default_route_only_is_a_warning(wg_env):
    peers = [[k, None, ips, 10, 25] for k, _, ips, _, _ in HEALTHY_PEERS]  # no endpoints
    doc, topo = wg_env(tree="wireguard-faulty", peers=peers)
    dev = topo.wireguard.interfaces["wg0"]
    assert dev.underlay == "eth0" and dev.underlay_by.startswith("the IPv4 default route")
    assert dev.underlay_family is None
    f = [f for f in mesh_check.check(topo, None) if f.code == "mesh.mtu"]
    assert len(f) == 1 and f[0].severity == "warning"


def test_healthy_mtu_fits_ipv6_overhead_too(wg_env):
    peers = [[K1, "[fd00::2]:51820", "10.100.0.2/32", 10, 25]]
    doc, topo = wg_env(peers=peers)
    dev = topo.wireguard.interfaces["wg0"]
    assert dev.underlay_family == "ipv6"
    assert "mesh.mtu" not in _codes(topo)  # 1420 + 80 = 1500


def test_sysfs_root_of_another_machine(tmp_path):
    root = tmp_path / "t"
    fakesys.load_file(str(FIXTURES / "wireguard-healthy.sysfs"), str(root))
    ev = wireguard.capture(ProbeOptions(sysfs_root=str(root)))
    assert ev["status"] == "not run"
    topo = derive({"probes": {"sysfs": sysfs.capture(ProbeOptions(sysfs_root=str(root))),
                              "wireguard": ev}})
    codes = _codes(topo, "info")
    assert "mesh.peers_not_checked" in codes and "mesh.mtu_not_checked" in codes
    assert _codes(topo, "error") == [] and _codes(topo, "warning") == []


def test_route_longest_prefix_skips_the_tunnel():
    routes = wireguard._routes(ROUTE + "wg0\t0001000A\t00000000\t0001\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n"
                               "eth1\t0001000A\t00000000\t0000\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n")
    addr = wireguard._ipv4_le("10.0.1.0:51820")
    assert wireguard._route_for(routes, addr, "wg0") == "eth0"  # eth1's route is not up
    assert wireguard._route_for(routes, wireguard._ipv4_le("8.8.8.8:1"), "wg0") == "eth0"
    assert wireguard._ipv4_le("[fd00::1]:5") is None and wireguard._ipv4_le("1.2.3:4") is None


def test_hostile_wg_output_is_escaped_and_bounded():
    bad = "\x1b[31m"
    ev = {"status": "ok", "captured_at": 1000, "route": {"text": "x" * 5000, "error": None},
          "interfaces": {"wg0" + bad: {"status": "ok", "error": None, "fields": {
              "public-key": "not a key\n", "listen-port": "99999999999999999999\n",
              "peers": f"{K1}\n{'A' * 10000}\n", "endpoints": f"{K1}\t1.2.3.4:5{bad}\n",
              "allowed-ips": f"{K1}\t(none)\n", "latest-handshakes": f"{K1}\t٣\n",
              "transfer": f"{K1}\tx\ty\n", "persistent-keepalive": f"{K1}\toff\n"}}}}
    topo = wireguard.derive(ev)
    (name, dev), = topo.wireguard.interfaces.items()
    assert "\x1b" not in name and "\x1b" not in (dev.peers[0].endpoint or "")
    assert dev.public_key is None and dev.listen_port is None
    p = dev.peers[0]
    assert p.latest_handshake is None and p.rx_bytes is None and p.allowed_ips == []
    assert len(dev.peers) == 1
    found = mesh_check.check(topo, None)
    assert all(f.severity != "error" for f in found)


# -- simulate --mesh: healthy and faulty single nodes -------------------------------------

def _sim(faults=(), mesh=True, layout="dgx-h100"):
    from nvtopo.checks import select_and_run
    from nvtopo.layouts import load
    from nvtopo.simulate import simulate

    doc = simulate(load(layout), list(faults), mesh=mesh)
    topo = derive(json.loads(json.dumps(doc)))
    return doc, topo, [f for f in select_and_run(topo).findings if f.code.startswith("mesh")]


def test_simulated_mesh_healthy_is_clean():
    doc, topo, found = _sim()
    assert found == []
    dev = topo.wireguard.interfaces["wg0"]
    assert len(dev.peers) == 3 and dev.underlay == "eth0" and dev.underlay_family == "ipv4"
    assert topo.sysfs.net["wg0"].mtu == 1420 and topo.sysfs.net["eth0"].mtu == 1500
    assert doc["simulated"]["faults"] == []


def test_simulated_mesh_faults_are_each_reported():
    doc, topo, found = _sim(["wg-stale-peer:2", "wg-mtu:1500", "wg-errors:4"])
    got = sorted((f.severity, f.code) for f in found)
    assert got == [("error", "mesh.mtu"), ("error", "mesh.peer_stale"),
                   ("warning", "mesh.errors")]
    stale = next(f for f in found if f.code == "mesh.peer_stale")
    assert stale.actual == "600 s ago"


@pytest.mark.parametrize("spec", ["wg-mtu:12", "wg-mtu:x", "wg-stale-peer:9", "wg-errors:"])
def test_bad_mesh_faults_are_one_line(spec):
    from nvtopo.errors import NvtopoError

    with pytest.raises(NvtopoError):
        _sim([spec])


# -- show: the mesh table ------------------------------------------------------------------

def _shown(topo, width=80):
    import io

    from rich.console import Console

    from nvtopo.render.matrix import render

    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(render(topo, width))
    return buf.getvalue()


def test_show_prints_the_mesh_at_80_columns():
    doc, topo, _ = _sim(["wg-stale-peer:2", "wg-errors:4"])
    out = _shown(topo)
    assert all(len(line) <= 80 for line in out.splitlines())
    block = out[out.index("Mesh (WireGuard)"):].splitlines()
    row = next(line for line in block if line.startswith("wg0"))
    assert "1420" in row and "eth0, MTU 1500, NUMA 0" in row
    assert "3 (2 live, 1 stale)" in row and "4 / 0" in row


def test_show_without_mesh_has_no_mesh_table():
    doc, topo, _ = _sim(mesh=False)
    assert "Mesh (WireGuard)" not in _shown(topo)


def test_show_escapes_hostile_interface_names():
    ev = {"status": "ok", "captured_at": 1000, "interfaces": {
        "wg\x1b]0;owned\x07[red]x": {"status": "not permitted", "error": "no", "fields": {}}}}
    topo = wireguard.derive(ev)
    out = _shown(topo)
    assert "\x1b" not in out and "\x07" not in out
    assert "[red]x" in out  # shown as text, never read as markup
    assert "not read" in " ".join(out.split()) and "permitted)" in out


def test_a_hanging_wg_is_ended_within_the_timeout(wg_env, tmp_path, monkeypatch):
    root = tmp_path / "hang"
    fakesys.load_file(str(FIXTURES / "wireguard-healthy.sysfs"), str(root))
    monkeypatch.setenv("FAKE_WG_MODE", "hang")
    start = time.monotonic()
    ev = wireguard.capture(ProbeOptions(timeout=1.0), sys_root=str(root),
                           route_path=str(tmp_path / "route"))
    assert time.monotonic() - start < 10  # it used to be able to wait for wg for minutes
    assert ev["interfaces"]["wg0"]["status"] == "timeout"
    dev = wireguard.derive(ev).wireguard.interfaces["wg0"]
    assert dev.status == "timeout" and dev.peers is None


def test_route_table_is_read_bounded(wg_env, tmp_path):
    doc, topo = wg_env(route_text=ROUTE + ("x" * 127 + "\n") * 9000)  # ~1.1 MiB
    route = doc["probes"]["wireguard"]["route"]
    assert route["text"] is None and "larger than" in route["error"]
    dev = topo.wireguard.interfaces["wg0"]
    assert dev.underlay is None and dev.underlay_by == "no route recorded"
    assert "mesh.mtu_not_checked" in _codes(topo, "info")


def test_hostile_interface_name_in_sysfs_is_escaped_in_check(tmp_path):
    import io

    from rich.console import Console

    from nvtopo.checks import select_and_run
    from nvtopo.render.check import print_check

    root = tmp_path / "t"
    fakesys.load_file(str(FIXTURES / "wireguard-faulty.sysfs"), str(root))
    os.rename(root / "class/net/wg0", root / "class/net/wg\x1b]0;x\x07")  # ESC, BEL
    topo = derive({"probes": {"sysfs": sysfs.capture(ProbeOptions(sysfs_root=str(root)))}})
    (name,) = [n for n, link in topo.sysfs.net.items() if link.wireguard]
    assert "\x1b" in name  # the model keeps the name as read ...
    report = select_and_run(topo)
    found = [f for f in report.findings if f.code.startswith("mesh")]
    assert {f.code for f in found} >= {"mesh.errors", "mesh.drops"}
    buf = io.StringIO()
    print_check(report, Console(file=buf, width=100, color_system=None), verbose=True)
    out = _shown(topo) + buf.getvalue()
    assert "mesh.errors" in out
    assert "\x1b" not in out and "\x07" not in out  # ... every output escapes it


def test_svg_picture_names_the_mesh_escaped():
    import xml.etree.ElementTree as ET

    from nvtopo.render.svg import render as svg

    doc, topo, _ = _sim(["wg-stale-peer:1"])
    root = ET.fromstring(svg(topo))
    lines = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")
             if t.get("class") == "mesh"]
    assert lines == ["WireGuard wg0 · MTU 1420 · underlay eth0, MTU 1500, NUMA 0 (route) · "
                     "peers 3 (2 live, 1 stale) · errors/drops 0 / 0"]
    ev = {"status": "ok", "captured_at": 1, "interfaces": {
        "wg<&>\x1b": {"status": "missing", "error": "no wg", "fields": {}}}}
    text = svg(wireguard.derive(ev))
    ET.fromstring(text)  # still well-formed XML
    assert "\x1b" not in text and "wg&lt;&amp;&gt;" in text
    _, plain, _ = _sim(mesh=False)
    assert 'class="mesh"' not in svg(plain)


def test_endpoint_family_reads_ascii_digits_only():
    from nvtopo.model.net import WgPeer

    assert WgPeer(endpoint="10.0.0.1:51820").endpoint_family() == "ipv4"
    assert WgPeer(endpoint="[fd00::1]:51820").endpoint_family() == "ipv6"
    assert WgPeer(endpoint="١٠.٠.٠.١:51820").endpoint_family() is None  # Arabic-Indic digits
    assert WgPeer(endpoint="²2.0.0.1:1").endpoint_family() is None
    assert WgPeer(endpoint=None).endpoint_family() is None


def test_userspace_wireguard_tun_is_neither_wireguard_nor_surely_not(wg_env):
    """wireguard-go / boringtun make a TUN device: type 65534 like the kernel's WireGuard, but
    no DEVTYPE=wireguard. Before: ``net: {}`` ("listed, no WireGuard"), and ``nvtopo cluster``
    named the node as one that left the mesh (a false error)."""
    from nvtopo.commands.cluster.facts import facts_of
    from nvtopo.commands.cluster.wgfacts import net_unsure

    doc, topo = wg_env(tree="wireguard-userspace")
    assert doc["probes"]["wireguard"]["status"] == "absent" and _calls(wg_env.log) == []
    (name, link), = topo.sysfs.net.items()  # eth0 and lo cannot be a tunnel: not kept
    assert (name, link.type, link.kind, link.tun) == ("wg0", 65534, None, True)
    assert link.maybe_wireguard and not link.wireguard
    assert topo.sysfs.net_cut is None
    assert mesh_check.check(topo, None) == []  # not called WireGuard, nor missing
    why = net_unsure(topo)
    assert why is not None and "wg0 is a TUN device" in why
    nf = facts_of(topo, "n.json")
    assert nf.mesh == [] and not nf.net_listed and nf.net_unsure == why


def test_kernel_wireguard_is_sure_and_a_plain_listing_is_sure_of_none(wg_env, monkeypatch):
    from nvtopo.commands.cluster.facts import facts_of
    from nvtopo.commands.cluster.wgfacts import net_unsure

    _doc, topo = wg_env(tree="wireguard-healthy")
    wg0 = topo.sysfs.net["wg0"]
    assert wg0.wireguard and not wg0.maybe_wireguard and wg0.tun is None  # tun_flags unread
    assert net_unsure(topo) is None and facts_of(topo, "n.json").mesh
    # eth0 and lo only (wg0 gone): listed whole, none could be WireGuard -> {} and sure
    root = Path(str(wg_env.log)).parent / "wireguard-healthy"
    os.unlink(root / "class/net/wg0")
    topo = derive({"probes": {"sysfs": sysfs.capture(ProbeOptions(sysfs_root=str(root)))}})
    assert topo.sysfs.net == {} and topo.sysfs.net_cut is None
    nf = facts_of(topo, "n.json")
    assert nf.net_listed and nf.net_unsure is None


def test_class_net_cut_short_is_unknown_not_none(tmp_path, monkeypatch):
    """class/net read up to MAX_NET names: wg0 sorts past the cut. Before: ``net: {}`` and the
    node called "no WireGuard interface"."""
    from nvtopo.commands.cluster.facts import facts_of
    from nvtopo.probes.sysfs import net as sysnet

    root = tmp_path / "t"
    fakesys.load_file(str(FIXTURES / "wireguard-healthy.sysfs"), str(root))
    monkeypatch.setattr(sysnet, "MAX_NET", 2)  # eth0, lo read; wg0 cut
    topo = derive({"probes": {"sysfs": sysfs.capture(ProbeOptions(sysfs_root=str(root)))}})
    assert topo.sysfs.net == {} and topo.sysfs.net_cut == 1
    nf = facts_of(topo, "n.json")
    assert not nf.net_listed and "1 more entries not looked at" in nf.net_unsure
