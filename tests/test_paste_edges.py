"""Pasted-text edge cases (issue 12, class 4) and plural agreement in counted messages.

Each case runs ``check`` on a real pasted excerpt (fixtures/nvml-text, copies of the shared
corpus) or on a simulated node, with its healthy counterpart.
"""

from __future__ import annotations

from pathlib import Path

from nvtopo import checks, snapshot
from nvtopo.checks import select as S

ROOT = Path(__file__).resolve().parent.parent
NVML_TEXT = ROOT / "fixtures" / "nvml-text"


def report(path: Path, layout=None):
    topo = snapshot.load(str(path))
    lay = S.select(topo, layout or "auto").layout
    return checks.run(topo, lay)


def test_fabric_in_progress_on_one_gpu_says_gpu_not_gpus():
    rep = report(NVML_TEXT / "nvidia_smi_q_fabric_in_progress_driver580.txt")
    got = [f for f in rep.findings if f.code == "fabric.in_progress"]
    assert len(got) == 1 and got[0].severity == "error"
    assert got[0].message.startswith("NVLink fabric training still in progress on 1 GPU")
    assert "1 GPUs" not in got[0].message
