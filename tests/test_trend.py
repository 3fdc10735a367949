"""``nvtopo trend`` (nvtopo/commands/trend.py): a simulated series of snapshots of one node
with a planted climbing counter across a reset, counters that stop climbing, time order,
a fleet grouped by host, the JSON and Prometheus forms."""

import copy
import gzip
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from cli_runner import make_runner
from nvtopo.cli import app
from nvtopo.commands import trend

EXAMPLE = Path(__file__).resolve().parent.parent / "nvtopo" / "examples" / \
    "dgx-h100-healthy.json.gz"
SYMBOL = ("devices/pci0000:05/0000:05:01.0/0000:06:00.0/0000:07:01.0/0000:09:00.0/infiniband/"
          "mlx5_0/ports/1/counters/symbol_error")
GPU3_AER = "devices/pci0000:16/0000:16:01.0/0000:17:00.0/0000:18:00.0/0000:19:00.0/" \
    "aer_dev_correctable"
BASE: Dict[str, Any] = json.loads(gzip.open(EXAMPLE).read())


def snap(path: Path, time: str, symbol: int, aer: Optional[int] = None,
         host: str = "node-017") -> str:
    d = copy.deepcopy(BASE)
    d.pop("derived", None)  # the evidence is edited: derive again
    d["host"]["time"], d["host"]["hostname"] = time, host
    files = d["probes"]["sysfs"]["files"]
    files[SYMBOL] = str(symbol)
    if aer is not None:
        files[GPU3_AER] = f"RxErr {aer}\nBadTLP 0\nTOTAL_ERR_COR {aer}"
    path.write_text(json.dumps(d), "utf-8")
    return str(path)


def series(t: Any, subject: str, counter: str) -> Any:
    [s] = [s for s in t.series if s.subject == subject and s.counter == counter]
    return s


def test_a_planted_climbing_counter_across_a_reset(tmp_path: Path) -> None:
    values = [(0, 2), (10, 2), (20, 5), (5, 1), (15, 4)]  # a reboot between the 3rd and 4th
    # written in reverse name order: time orders them, not the file names
    for i, (sym, aer) in enumerate(values):
        snap(tmp_path / f"s{9 - i}.json", f"2026-01-0{i + 1}T00:00:00+00:00", sym, aer)
    t = trend.run([str(tmp_path)])
    s = series(t, "mlx5_0 port 1", "ib.symbol_error")
    assert [v for _, v in s.values] == [0, 10, 20, 5, 15]
    assert (s.epochs, s.increase, s.rising, s.last_step) == (2, 35, True, 10)
    assert s.rate_per_hour == pytest.approx(35 / 96)
    a = series(t, "0000:19:00.0 (GPU3)", "aer.correctable")
    assert (a.epochs, a.increase, a.rising) == (2, 3 + 1 + 3, True)  # 2->5, reset, 0->1->4
    rising = sorted(str(f.subject) for f in t.findings if f.code == "trend.rising")
    assert rising == ["node-017 0000:19:00.0 (GPU3)", "node-017 mlx5_0 port 1"]
    # every other counter is flat: no finding about it
    assert all(x.increase == 0 for x in t.series
               if (x.subject, x.counter) not in {("mlx5_0 port 1", "ib.symbol_error"),
                                                 ("0000:19:00.0 (GPU3)", "aer.correctable")})


def test_a_counter_that_stopped_climbing_is_not_rising(tmp_path: Path) -> None:
    for i, sym in enumerate([0, 50, 50]):
        snap(tmp_path / f"s{i}.json", f"2026-01-0{i + 1}T00:00:00+00:00", sym)
    t = trend.run([str(tmp_path)])
    s = series(t, "mlx5_0 port 1", "ib.symbol_error")
    assert (s.increase, s.rising) == (50, False)
    assert not [f for f in t.findings if f.code == "trend.rising"]


def test_a_fleet_is_grouped_by_host(tmp_path: Path) -> None:
    for i in range(3):
        snap(tmp_path / f"a{i}.json", f"2026-01-0{i + 1}T00:00:00+00:00", i * 7, host="a")
        snap(tmp_path / f"b{i}.json", f"2026-01-0{i + 1}T00:00:00+00:00", 3, host="b")
    snap(tmp_path / "c.json", "2026-01-01T00:00:00+00:00", 1, host="c")
    t = trend.run([str(tmp_path)])
    assert sorted(t.hosts) == ["a", "b", "c"]
    assert [str(f.subject) for f in t.findings] == ["a mlx5_0 port 1", "c"]
    assert [f.code for f in t.findings] == ["trend.rising", "trend.not_checked"]


def test_the_command_and_its_forms(tmp_path: Path) -> None:
    for i, sym in enumerate([1, 4, 9]):
        snap(tmp_path / f"s{i}.json", f"2026-01-0{i + 1}T00:00:00+00:00", sym)
    (tmp_path / "junk.json").write_text("{", "utf-8")
    runner = make_runner()  # the JSON document is validated against trend.schema.json
    r = runner.invoke(app, ["trend", str(tmp_path)])
    assert r.exit_code == 1, r.stderr
    assert "mlx5_0 port 1" in r.stdout and "1 counter still climbing" in r.stdout
    assert "unreadable:" in r.stdout
    r = runner.invoke(app, ["trend", str(tmp_path), "--format", "json"])
    doc = json.loads(r.stdout)
    [s] = [s for s in doc["series"] if s["counter"] == "ib.symbol_error"
           and s["subject"] == "mlx5_0 port 1"]
    assert (s["first"], s["last"], s["increase"], s["rising"]) == (1, 9, 8, True)
    r = runner.invoke(app, ["trend", str(tmp_path), "--format", "prometheus"])
    line = [x for x in r.stdout.splitlines() if x.startswith("nvtopo_trend_counter_rising{")
            and "symbol_error" in x and "mlx5_0 port" in x]
    assert line == ['nvtopo_trend_counter_rising{host="node-017",subject="mlx5_0 port 1",'
                    'counter="ib.symbol_error"} 1']
    from prometheus_client.parser import text_string_to_metric_families

    names: List[str] = [m.name for m in text_string_to_metric_families(r.stdout)]
    assert "nvtopo_trend_counter_increase" in names
    r = runner.invoke(app, ["trend", str(tmp_path / "nothing-here")])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1


LINK_DOWNED = SYMBOL.replace("symbol_error", "link_downed")


def test_a_port_down_more_than_ten_times_flapped(tmp_path: Path) -> None:
    for i, downed in enumerate([0, 4, 12, 12]):
        p = Path(snap(tmp_path / f"s{i}.json", f"2026-01-0{i + 1}T00:00:00+00:00", 0))
        d = json.loads(p.read_text("utf-8"))
        d["probes"]["sysfs"]["files"][LINK_DOWNED] = str(downed)
        p.write_text(json.dumps(d), "utf-8")
    t = trend.run([str(tmp_path)])
    assert [(f.severity, f.code, str(f.subject)) for f in t.findings] == [
        ("error", "trend.link_flapping", "node-017 mlx5_0 port 1")]


def test_the_text_form_never_cuts_a_host_or_a_subject(tmp_path: Path) -> None:
    """A host name far wider than the column's usual 16 characters is printed whole."""
    from nvtopo.render import trend as render_trend
    host = "gpu-node-0017.rack-b12.cluster-east.example.org"
    for i, sym in enumerate((0, 10, 20)):
        snap(tmp_path / f"s{i}.json", f"2026-01-0{i + 1}T00:00:00+00:00", sym, host=host)
    out = render_trend.text(trend.run([str(tmp_path)]))
    row = next(line for line in out.splitlines() if "ib.symbol_error" in line)
    assert row.startswith("* " + host + " ") and "mlx5_0 port 1" in row
