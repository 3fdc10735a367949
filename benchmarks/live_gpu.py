"""The live run on a real GPU node: every probe against the real driver, and what nvidia-smi says.

Run it from a checkout on a node with an NVIDIA driver, as root (it also runs the commands
as an unprivileged user, ``nobody``, where it can switch to one)::

    OUT=/tmp/nvtopo-live python3 benchmarks/live_gpu.py

It writes, under ``$OUT``:

* ``env.json``: the machine, driver, Python and package versions;
* ``smi/NAME.txt`` (+ ``.meta.json``): ``nvidia-smi topo -m``, ``topo -p2p r`` and the other
  texts nvtopo reads, as printed, with exit status and wall time;
* ``snapshot-root.json``, ``snapshot-nobody.json``: one live snapshot each;
* ``runs.json``: every live ``nvtopo snapshot`` of the loop (fresh processes, half of them
  with every CPU kept busy), each probe's status, wall time, NVML calls;
* ``timing.json``: ``nvidia-smi topo -m`` against the live probes, and the NVML probe's calls
  by function (count, total and slowest seconds);
* ``cli/USER-COMMAND[-json][-timeout].txt``: ``show``, ``links``, ``ib``, ``check`` live as
  root and unprivileged, table and JSON, with and without ``--timeout``;
* ``startup.json``: the live commands' CPU time (the process and its children, nvidia-smi
  among them) against ``python -c "import typer, rich.console, rich.table"``, interleaved,
  medians, as an installed nvtopo runs (compiled bytecode, in a private pycache).

``NVTOPO_LIVE_STEPS`` (comma-separated: env, smi, snapshots, timing, loop, commands,
startup) runs only the steps named.

Every step is bounded; the whole run stops starting new steps after ``BUDGET_S`` seconds.
Nothing here is needed by nvtopo itself: it is how ``fixtures/real/`` was made.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(os.environ.get("OUT") or "/tmp/nvtopo-live")
BUDGET_S = float(os.environ.get("NVTOPO_LIVE_BUDGET_S", "420"))
LOOPS = int(os.environ.get("NVTOPO_LIVE_LOOPS", "30"))
STEPS = [x for x in os.environ.get("NVTOPO_LIVE_STEPS", "").split(",") if x]
START = time.monotonic()

#: nvidia-smi texts nvtopo reads (file name, arguments).
SMI = [
    ("topo-m", ["topo", "-m"]),
    ("topo-mp", ["topo", "-mp"]),
    ("topo-p2p-r", ["topo", "-p2p", "r"]),
    ("topo-p2p-w", ["topo", "-p2p", "w"]),
    ("topo-p2p-n", ["topo", "-p2p", "n"]),
    ("topo-p2p-a", ["topo", "-p2p", "a"]),
    ("nvlink-s", ["nvlink", "-s"]),
    ("nvlink-c", ["nvlink", "-c"]),
    ("nvlink-e", ["nvlink", "-e"]),
    ("nvlink-R", ["nvlink", "-R"]),
    ("q", ["-q"]),
    ("q-x", ["-q", "-x"]),
    ("L", ["-L"]),
]


def left() -> float:
    return BUDGET_S - (time.monotonic() - START)


def log(msg: str) -> None:
    print(f"[{time.monotonic() - START:7.1f}s] {msg}", flush=True)


def run(argv: List[str], timeout: float = 120, env: Optional[Dict[str, str]] = None
        ) -> Dict[str, Any]:
    t0 = time.perf_counter()
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout, env=env)
        rc: Optional[int] = p.returncode
        out, err = p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = None, exc.stdout or b"", (exc.stderr or b"") + b"\n[timed out]"
    except OSError as exc:
        rc, out, err = None, b"", str(exc).encode()
    return {"argv": argv, "rc": rc, "wall_s": round(time.perf_counter() - t0, 4),
            "stdout": out, "stderr": err}


def save(path: Path, res: Dict[str, Any], suffix: str = ".txt") -> Dict[str, Any]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(suffix).write_bytes(res["stdout"])
    meta = {k: v for k, v in res.items() if k not in ("stdout", "stderr")}
    meta["stderr"] = res["stderr"].decode("utf-8", "replace")[-4000:]
    meta["stdout_bytes"] = len(res["stdout"])
    path.with_suffix(".meta.json").write_text(json.dumps(meta, indent=1))
    return meta


def nobody_prefix() -> Optional[List[str]]:
    """argv prefix that runs a command as ``nobody``, or None where that is impossible."""
    if os.geteuid() != 0:
        return None
    home = Path("/tmp/nvtopo-nobody")
    home.mkdir(exist_ok=True)
    os.chmod(home, 0o777)
    env = ["env", f"HOME={home}", f"PYTHONPATH={os.environ.get('PYTHONPATH', '')}",
           "PYTHONDONTWRITEBYTECODE=1"]
    if shutil.which("setpriv"):
        return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *env]
    if shutil.which("runuser"):
        return ["runuser", "-u", "nobody", "--", *env]
    return None


def environment() -> None:
    info: Dict[str, Any] = {"python": sys.version, "executable": sys.executable,
                            "platform": platform.platform(), "uid": os.geteuid(),
                            "nproc": os.cpu_count()}
    for mod in ("pynvml", "typer", "rich", "psutil", "click"):
        try:
            m = __import__(mod)
            info[mod] = {"file": getattr(m, "__file__", None),
                         "version": getattr(m, "__version__", None)}
        except Exception as exc:  # noqa: BLE001
            info[mod] = {"error": repr(exc)}
    try:
        from importlib.metadata import version
        info["nvidia-ml-py"] = version("nvidia-ml-py")
    except Exception as exc:  # noqa: BLE001
        info["nvidia-ml-py"] = repr(exc)
    for name, argv in (("uname", ["uname", "-a"]), ("smi_version", ["nvidia-smi", "--version"]),
                       ("dev", ["ls", "-l", "/dev"]), ("lsmod", ["cat", "/proc/modules"])):
        r = run(argv, 30)
        info[name] = r["stdout"].decode("utf-8", "replace")[-6000:]
    (OUT / "env.json").write_text(json.dumps(info, indent=1))
    log(f"env: {info.get('smi_version', '')[:200]!r}")


def smi_texts() -> None:
    for name, args in SMI:
        meta = save(OUT / "smi" / name, run(["nvidia-smi", *args], 90),
                    ".xml" if name == "q-x" else ".txt")
        log(f"nvidia-smi {' '.join(args)}: rc={meta['rc']} {meta['wall_s']}s "
            f"{meta['stdout_bytes']}B")
    for tool, args in (("dcgmi", ["nvlink", "-s"]), ("ibstat", []), ("ibv_devinfo", []),
                       ("gdscheck", ["-p"])):
        if shutil.which(tool):
            save(OUT / "smi" / f"{tool}", run([tool, *args], 60))


def nvtopo(args: List[str], prefix: Optional[List[str]] = None, timeout: float = 120,
           columns: str = "120") -> Dict[str, Any]:
    env = dict(os.environ, COLUMNS=columns, NO_COLOR="1")
    return run([*(prefix or []), sys.executable, "-m", "nvtopo", *args], timeout, env)


def summary(doc: Dict[str, Any]) -> Dict[str, Any]:
    probes = doc.get("probes", {})
    nv = probes.get("nvml", {})
    return {"status": {k: v.get("status") for k, v in probes.items()},
            "errors": {k: v.get("error") for k, v in probes.items() if v.get("error")},
            "duration_s": doc.get("duration_s"),
            "nvml_ncalls": nv.get("ncalls"), "nvml_duration_s": nv.get("duration_s"),
            "topo_duration_s": probes.get("topo-text", {}).get("duration_s")}


def single_snapshots(prefix: Optional[List[str]]) -> None:
    for who, pre in (("root", None), ("nobody", prefix)):
        if who == "nobody" and pre is None:
            continue
        path = Path("/tmp") / f"nvtopo-snapshot-{who}.json"
        r = nvtopo(["snapshot", "-o", str(path)], pre)
        save(OUT / "cli" / f"{who}-snapshot", r)
        if path.exists():
            shutil.copy(path, OUT / f"snapshot-{who}.json")
        log(f"snapshot as {who}: rc={r['rc']} {r['wall_s']}s")


def loop(prefix: Optional[List[str]]) -> None:
    runs: List[Dict[str, Any]] = []
    spinners: List[subprocess.Popen] = []
    try:
        for i in range(LOOPS):
            if left() < 15:
                log(f"snapshot loop stopped at {i} for the budget")
                break
            loaded = i >= LOOPS // 2
            if loaded and not spinners:
                spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                            for _ in range(os.cpu_count() or 2)]
            path = Path("/tmp") / f"nvtopo-loop-{i}.json"
            r = nvtopo(["snapshot", "-o", str(path)])
            row: Dict[str, Any] = {"i": i, "loaded": loaded, "rc": r["rc"],
                                   "wall_s": r["wall_s"],
                                   "stderr": r["stderr"].decode("utf-8", "replace")[-2000:]}
            try:
                row.update(summary(json.loads(path.read_text())))
            except Exception as exc:  # noqa: BLE001
                row["read_error"] = repr(exc)
            runs.append(row)
            (OUT / "runs.json").write_text(json.dumps(runs, indent=1))
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    bad = [r for r in runs if any(s in ("unanswered", "crashed")
                                  for s in r.get("status", {}).values()) or r["rc"] != 0]
    log(f"snapshot loop: {len(runs)} runs, {len(bad)} lost a probe or failed")


def timing() -> None:
    out: Dict[str, Any] = {}
    walls = [run(["nvidia-smi", "topo", "-m"], 60)["wall_s"] for _ in range(10)]
    out["nvidia_smi_topo_m_wall_s"] = walls
    # In-process: the NVML probe alone, every call timed by function.
    sys.path.insert(0, str(ROOT))
    from nvtopo.probes import ProbeOptions
    from nvtopo.probes.nvml import live as nvlive

    per: Dict[str, List[float]] = {}
    real_ask, real_fields = nvlive.LiveSource.ask, nvlive.LiveSource.ask_fields

    def ask(self: Any, fn: str, args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real_ask(self, fn, args)
        finally:
            per.setdefault(fn, []).append(time.perf_counter() - t0)

    def ask_fields(self: Any, gpu: int, ids: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real_fields(self, gpu, ids)
        finally:
            per.setdefault(f"nvmlDeviceGetFieldValues[{len(ids)}]", []).append(
                time.perf_counter() - t0)

    nvlive.LiveSource.ask, nvlive.LiveSource.ask_fields = ask, ask_fields  # type: ignore
    probe_walls = []
    calls = []
    for _ in range(5):
        t0 = time.perf_counter()
        ev = nvlive.capture(ProbeOptions(timeout=60))
        probe_walls.append(round(time.perf_counter() - t0, 4))
        calls.append(ev.get("ncalls"))
    out["nvml_probe_wall_s"] = probe_walls
    out["nvml_probe_ncalls"] = calls
    out["nvml_by_function"] = {
        fn: {"count": len(v) // 5, "total_s": round(sum(v) / 5, 6), "max_s": round(max(v), 6)}
        for fn, v in sorted(per.items(), key=lambda kv: -sum(kv[1]))}
    from nvtopo.snapshot import live as snaplive
    whole = []
    for _ in range(3):
        t0 = time.perf_counter()
        snaplive.take(ProbeOptions(timeout=60))
        whole.append(round(time.perf_counter() - t0, 4))
    out["snapshot_in_process_wall_s"] = whole
    out["medians"] = {"nvidia_smi_topo_m": statistics.median(walls),
                      "nvml_probe": statistics.median(probe_walls),
                      "snapshot_in_process": statistics.median(whole)}
    (OUT / "timing.json").write_text(json.dumps(out, indent=1))
    log(f"timing: {out['medians']}")


def commands(prefix: Optional[List[str]]) -> None:
    users = [("root", None)] + ([("nobody", prefix)] if prefix else [])
    for who, pre in users:
        for cmd in ("show", "links", "ib", "check"):
            for fmt, extra in (("", []), ("-json", ["--format", "json"])):
                for tname, targs in (("", []), ("-timeout", ["--timeout", "10"])):
                    if left() < 20:
                        log("commands stopped for the budget")
                        return
                    if tname and not fmt and who == "nobody":
                        continue
                    r = nvtopo([cmd, *extra, *targs], pre)
                    save(OUT / "cli" / f"{who}-{cmd}{fmt}{tname}", r)
        log(f"commands as {who} done")
    for cols in ("80", "200"):
        save(OUT / "cli" / f"root-show-{cols}col", nvtopo(["show"], columns=cols))
        save(OUT / "cli" / f"root-check-{cols}col", nvtopo(["check"], columns=cols))
    save(OUT / "cli" / "root-snapshot-timeout-0.2",
         nvtopo(["snapshot", "--timeout", "0.2", "-o", "/tmp/nvtopo-short.json"]))
    if Path("/tmp/nvtopo-short.json").exists():
        shutil.copy("/tmp/nvtopo-short.json", OUT / "snapshot-timeout-0.2.json")


def startup(runs: int = 11) -> None:
    """Each live command's CPU time against the import floor, interleaved, medians."""
    import resource

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPYCACHEPREFIX="/tmp/nvtopo-live-pycache", NO_COLOR="1", COLUMNS="120",
               PYTHONPATH=str(ROOT))
    snap = "/tmp/nvtopo-startup.json"
    cmds = {"floor": [sys.executable, "-c", "import typer, rich.console, rich.table"]}
    for name, args in (("snapshot", ["snapshot", "-o", snap]), ("check", ["check"]),
                       ("check-json", ["check", "--format", "json"]), ("show", ["show"]),
                       ("links", ["links"]), ("ib", ["ib"]),
                       ("check-from", ["check", "--from", snap])):
        cmds[name] = [sys.executable, "-m", "nvtopo", *args]

    def cpu(argv: List[str]) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, capture_output=True, env=env, timeout=120, cwd="/tmp")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    for argv in cmds.values():  # compiled bytecode, the snapshot for check --from
        cpu(argv), cpu(argv)
    times: Dict[str, List[float]] = {k: [] for k in cmds}
    for _ in range(runs):
        if left() < 10:
            break
        for k, argv in cmds.items():
            times[k].append(round(cpu(argv), 4))
    floor = statistics.median(times["floor"])
    out = {"about": "CPU time (user + system, the command's process and its children), "
                    f"{len(times['floor'])} interleaved runs, medians; compiled bytecode",
           "floor": "python -c 'import typer, rich.console, rich.table'",
           "load_average": os.getloadavg(),
           "median_s": {k: statistics.median(v) for k, v in times.items() if v},
           "ratio": {k: round(statistics.median(v) / floor, 2) for k, v in times.items() if v},
           "runs_s": times}
    (OUT / "startup.json").write_text(json.dumps(out, indent=1))
    log(f"startup: {out['ratio']}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    os.chmod(ROOT, 0o755)
    prefix = nobody_prefix()
    for name, step in (("env", environment), ("smi", smi_texts)):
        if STEPS and name not in STEPS:
            continue
        try:
            step()
        except Exception as exc:  # noqa: BLE001
            log(f"{step.__name__} failed: {exc!r}")
    for name, step2 in (("snapshots", single_snapshots), ("timing", lambda p: timing()),
                        ("loop", loop), ("commands", commands),
                        ("startup", lambda p: startup())):
        if STEPS and name not in STEPS:
            continue
        try:
            step2(prefix)
        except Exception as exc:  # noqa: BLE001
            log(f"{name} failed: {exc!r}")
    log("done")


if __name__ == "__main__":
    main()
