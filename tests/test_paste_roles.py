"""Issue 23 class 1: a network paste on its own can fail.

With no ``topo -m`` (no GPU, no PCI placement), the role resolver (nvtopo/checks/roles.py,
``by_paste``) reads which ports carry data from the paste itself: the card model and link
layer most of its NICs run active, an InfiniBand virtual function, an InfiniBand port holding
the LID the paste's one subnet manager gave it.  A down port so shown compute is an error; one
whose role the paste cannot tell is a warning worded "role unknown"; each class has its
healthy counterpart (fixtures/ib-text/README.md says what each text shows)."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from nvtopo.checks import roles as R
from nvtopo.cli import app
from nvtopo.probes import ib_text

IB = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ib-text")
runner = CliRunner()


def verdict(name):
    r = runner.invoke(app, ["check", "--from", os.path.join(IB, name), "--format", "json"],
                      env={"COLUMNS": "200"})
    doc = json.loads(r.stdout)
    return r.exit_code, [(f["severity"], f["code"], f["subject"], f["message"])
                         for f in doc["findings"] if f["severity"] in ("error", "warning")]


def roles_of(name):
    with open(os.path.join(IB, name), encoding="utf-8") as fh:
        topo = ib_text.derive_text(fh.read(), name)
    r = R.resolve(topo)
    return {x: (role.role, role.by) for x, role in r.roles.items()}


FAULTS = [
    # 2 of 8 ConnectX-7 400G ports Down/Disabled beside 6 active ones of the same card model
    ("ibstat_ib_ndr_cx7_8port_2_down_disabled.txt", ["mlx5_2 port 1", "mlx5_5 port 1"],
     "6 of its NICs active at 400 Gb/s, 2 down"),
    # the only InfiniBand port of a pod's VF Down
    ("ibstat_ib_vf_mt4126_pod_only_port_down.txt", ["mlx5_0 port 1"],
     "InfiniBand virtual function (MT4126)"),
    # a port Down/Polling that still holds its LID
    ("ibstat_ib_hdr_down_polling_holds_lid.txt", ["mlx5_3 port 1"],
     "holds LID 47 from the subnet manager at LID 3"),
    # ibv_devinfo showing PORT_INIT beside PORT_ACTIVE ports of its card model
    ("ibv_devinfo_ib_cx7_one_port_init.txt", ["mlx5_3 port 1"],
     "3 of its NICs active, 1 down"),
]


@pytest.mark.parametrize("name,down,why", FAULTS)
def test_down_compute_port_of_a_paste_is_an_error(name, down, why):
    rc, found = verdict(name)
    assert rc == 1
    assert [(s, c, subj) for s, c, subj, _ in found] == \
        [("error", "ib.port_down", d) for d in down]
    for _, _, _, msg in found:
        assert "a compute port, by the paste: " in msg and why in msg
        assert "not a compute port" not in msg


def test_port_init_says_no_subnet_manager_configured_it():
    _, found = verdict("ibv_devinfo_ib_cx7_one_port_init.txt")
    assert "is INIT/" in found[0][3] and "no subnet manager has configured" in found[0][3]


HEALTHY = [
    # a dual-port storage card (same model, one system image GUID) with one port down beside
    # 8 single-function compute HCAs: storage, a warning
    ("ibstat_ib_ndr_cx7_8compute_storage_dualport_one_down.txt", "mlx5_9 port 1",
     "not a compute port"),
    # an admin-disabled management port (ConnectX-4 Lx, Ethernet) beside 4 compute CX-7
    ("ibstat_mgmt_cx4lx_disabled_beside_4_cx7.txt", "mlx5_4 port 1", "not a compute port"),
    # real (nccl-tests issue 188): a dual-port CX-6 with its second port Disabled
    ("ibstat_ib_hdr_cx6_dualport_second_port_disabled.txt", "mlx5_1 port 1", "role unknown"),
    # real (nccl-tests issue 128): one active beside one down of the same model cannot tell a
    # one-rail node from a two-rail one with a port off
    ("ibstat_ib_hdr_cx6_mt4123_active_and_down.txt", "mlx5_1 port 1", "role unknown"),
    # real (DeepEP issue 38): one PF block alone, PORT_DOWN, LID 65535 (never configured)
    ("ibv_devinfo_ib_cx7_mt4129_port_down_lid65535.txt", "mlx5_0 port 1", "role unknown"),
]


@pytest.mark.parametrize("name,down,says", HEALTHY)
def test_healthy_counterparts_stay_warnings(name, down, says):
    rc, found = verdict(name)
    assert rc == 0
    assert [(s, c, subj) for s, c, subj, _ in found] == [("warning", "ib.port_down", down)]
    assert says in found[0][3]
    if says == "role unknown":
        assert "not a compute port" not in found[0][3]


def test_paste_roles_by_their_evidence():
    got = roles_of("ibstat_ib_ndr_cx7_8compute_storage_dualport_one_down.txt")
    assert {x: got[x] for x in ("mlx5_0", "mlx5_7")} == {
        "mlx5_0": (R.COMPUTE, "card"), "mlx5_7": (R.COMPUTE, "card")}
    assert got["mlx5_8"] == got["mlx5_9"] == (R.STORAGE, "card")
    got = roles_of("ibstat_mgmt_cx4lx_disabled_beside_4_cx7.txt")
    assert got["mlx5_4"] == (R.STORAGE, "card") and got["mlx5_0"] == (R.COMPUTE, "card")
    got = roles_of("ibstat_ib_hdr_cx6_dualport_second_port_disabled.txt")
    # the active ports hold LIDs from the one SM (9); the disabled one holds none
    assert got == {"mlx5_0": (R.COMPUTE, "sm_lid"), "mlx5_1": (R.UNKNOWN, "none"),
                   "mlx5_2": (R.COMPUTE, "sm_lid")}


def test_two_subnets_or_a_pf_alone_decide_nothing():
    """An LID held on one of two subnet managers, or a lone PF of no VF model: unknown."""
    text = ("CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tPort 1:\n"
            "\t\tState: Down\n\t\tPhysical state: Polling\n\t\tRate: 10\n\t\tBase lid: 47\n"
            "\t\tSM lid: 3\n\t\tLink layer: InfiniBand\n"
            "CA 'mlx5_1'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n"
            "\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400\n\t\tBase lid: 9\n"
            "\t\tSM lid: 1\n\t\tLink layer: InfiniBand\n")
    topo = ib_text.derive_text(text, "two-sms")
    assert R.resolve(topo).role("mlx5_0") == R.UNKNOWN
    vf = text.split("CA 'mlx5_1'")[0].replace("MT4123", "MT4129").replace("Base lid: 47",
                                                                        "Base lid: 65535")
    assert R.resolve(ib_text.derive_text(vf, "pf")).role("mlx5_0") == R.UNKNOWN
    assert R.resolve(ib_text.derive_text(vf.replace("MT4129", "MT4126"), "vf")).role(
        "mlx5_0") == R.COMPUTE
