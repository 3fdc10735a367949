"""``nvtopo watch --every DURATION``: the node-local loop that keeps a node's verdict current
(docs/collect.md §3): every DURATION it takes the snapshot, checks it, writes the Prometheus
textfile (atomically, as ``check --format prometheus -o`` does) and, where asked, sets the
node's labels and a condition through the Kubernetes API server.

The API is spoken with the standard library only (``urllib``; no client library): the
in-cluster service account's token and CA (``/var/run/secrets/kubernetes.io/serviceaccount``)
and ``KUBERNETES_SERVICE_HOST``/``_PORT``, or ``--api URL``.  Two requests per round, each a
strategic-merge ``PATCH``:

* ``/api/v1/nodes/NODE``: ``metadata.labels``, the node's own facts under ``nvtopo.io/``
  (:func:`node_labels`: the NVLink domain and clique, the rails and their rate, the verdict);
* ``/api/v1/nodes/NODE/status``: one ``status.conditions`` entry, type :data:`CONDITION`
  (merged by type: the kubelet's conditions are untouched), ``True`` when the check has an
  error finding, ``False`` when not, ``Unknown`` when the node could not be checked.

Every label is checked against Kubernetes' rules first (:mod:`nvtopo.render.k8s`); one that
fails is left out.  ``--dry-run`` prints the requests, one JSON object per line, instead of
sending them.  A refused request (no permission, the API down) is one line on standard error
and the loop goes on: the textfile is still written.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..errors import NvtopoError

#: The node condition set (NodeCondition-style: ``True`` means the problem is present, as
#: node-problem-detector's conditions do).
CONDITION = "NvtopoTopologyFault"
#: Where a pod's service account is mounted.
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
#: The longest condition message sent.
MAX_MESSAGE = 1024
_UNITS = {"s": 1, "m": 60, "h": 3600}


def parse_every(text: str) -> float:
    """``30s``, ``5m``, ``1h`` or plain seconds -> seconds (at least 1)."""
    body = text.strip().lower()
    unit = _UNITS.get(body[-1:], None)
    number = body[:-1] if unit else body
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        raise NvtopoError(f"not a duration: {text!r} (e.g. 30s, 5m, 1h)",
                          where="--every") from None
    if not value >= 1 or value > 7 * 86400:
        raise NvtopoError(f"{text!r}: between 1 s and 7 days", where="--every")
    return value


@dataclass
class Api:
    """Where the API server is and how to be let in."""

    base: str
    token: Optional[str] = None
    cafile: Optional[str] = None

    @classmethod
    def in_cluster(cls, url: Optional[str] = None, sa_dir: str = SERVICE_ACCOUNT) -> "Api":
        """``url`` or the in-cluster address; the service account's token and CA where
        mounted (none: the requests go without, and the server says no)."""
        if url is None:
            host = os.environ.get("KUBERNETES_SERVICE_HOST")
            port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
            if not host:
                raise NvtopoError("not in a Kubernetes pod (no KUBERNETES_SERVICE_HOST): "
                                  "give --api URL, or --dry-run", where="--kubernetes")
            url = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
        token = None
        try:
            with open(os.path.join(sa_dir, "token"), encoding="utf-8") as f:
                token = f.read(16384).strip() or None
        except OSError:
            pass
        ca = os.path.join(sa_dir, "ca.crt")
        return cls(base=url.rstrip("/"), token=token, cafile=ca if os.path.exists(ca) else None)

    def send(self, method: str, path: str, content_type: str, body: Dict[str, Any],
             timeout: float = 20) -> Tuple[int, str]:
        """(HTTP status, the start of the answer); status 0 when nothing answered."""
        import ssl
        import urllib.error
        import urllib.request

        req = urllib.request.Request(self.base + path, method=method,
                                     data=json.dumps(body).encode("utf-8"),
                                     headers={"Content-Type": content_type,
                                              "Accept": "application/json"})
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        ctx = ssl.create_default_context(cafile=self.cafile) \
            if self.base.startswith("https:") else None
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
                return r.status, r.read(2048).decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read(2048).decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as e:
            return 0, str(getattr(e, "reason", e))


def node_labels(nf: Any, verdict: Optional[str]) -> Dict[str, str]:
    """The node's own labels, from its facts (:class:`~.cluster.facts.NodeFacts`): the
    cluster labels a node can know alone, and the verdict; each valid or left out."""
    from ..layouts import domain_nodes
    from ..render import k8s

    labels: Dict[str, str] = {}
    multi = (domain_nodes(nf.layout) or 0) > 1 if nf is not None and nf.layout else False
    if nf is not None:
        done = nf.fabric and all(f[2] == "completed" and f[3] == "success" for f in nf.fabric)
        if multi and done and nf.domain and len({f[1] for f in nf.fabric}) == 1:
            labels[k8s.CLIQUE] = f"{nf.domain}.{nf.fabric[0][1]}"
            labels[k8s.DOMAIN] = str(nf.domain)
        labels[k8s.RAILS] = str(len(nf.rails))
        rates = {r.rate for r in nf.rails if r.rate is not None}
        if len(rates) == 1:
            rate = next(iter(rates))
            labels[k8s.RAIL_RATE] = str(int(rate) if rate == int(rate) else rate)
    labels[k8s.PREFIX + "verdict"] = verdict or "unknown"
    return {k: v for k, v in labels.items()
            if k8s.label_key_problem(k) is None and k8s.label_value_problem(v) is None}


def condition(verdict: Optional[str], message: str, now: str, since: str) -> Dict[str, Any]:
    """The :data:`CONDITION` entry: ``verdict`` None means the node could not be checked."""
    from ..safe import printable

    status, reason = {"fail": ("True", "ErrorFindings"), "pass": ("False", "NoErrorFindings")
                      }.get(verdict or "", ("Unknown", "NotChecked"))
    return {"type": CONDITION, "status": status, "reason": reason,
            "message": printable(message)[:MAX_MESSAGE], "lastHeartbeatTime": now,
            "lastTransitionTime": since}


def requests(node: str, labels: Dict[str, str], cond: Dict[str, Any]
             ) -> List[Tuple[str, str, str, Dict[str, Any]]]:
    """The round's two requests: (method, path, content type, body)."""
    from urllib.parse import quote

    path = "/api/v1/nodes/" + quote(node, safe="")
    smp = "application/strategic-merge-patch+json"
    return [("PATCH", path, smp, {"metadata": {"labels": labels}}),
            ("PATCH", path + "/status", smp, {"status": {"conditions": [cond]}})]


@dataclass
class Round:
    """What one round found: the verdict (None: not checked), the condition's message, the
    node's facts, and the Prometheus text (None: nothing to write)."""

    verdict: Optional[str]
    message: str
    facts: Any = None
    textfile: Optional[str] = None


def check_once(open_input: Callable[[], Any], chosen: Any, limits: Any, path: str) -> Round:
    """Snapshot (``open_input``), check, facts and the Prometheus text; an input that cannot
    be read is a round with no verdict, never an exception."""
    from .. import checks
    from ..render import export
    from ..render import prometheus as prom
    from .cluster.facts import facts_of

    try:
        opened = open_input()
    except NvtopoError as e:
        return Round(None, f"could not take the snapshot: {e.message}")
    report = checks.select_and_run(opened.model, chosen, thresholds=limits)
    worst = [f for f in report.findings if f.severity == "error"]
    message = (f"{len(worst)} error finding(s): " + "; ".join(
        f"{f.code} {f.subject}: {f.message}" for f in worst[:3])) if worst else \
        f"no error finding ({report.layout_name or 'no layout'})"
    durations = prom.probe_durations(opened.document) if opened.document else {}
    text = export.check_document(report, opened.model, "prometheus", durations=durations)
    return Round(report.verdict, message, facts_of(opened.model, path), text)


__all__ = ["parse_every", "Api", "node_labels", "condition", "requests", "check_once",
           "Round", "CONDITION"]
