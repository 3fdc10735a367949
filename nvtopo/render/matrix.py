"""The Rich rendering of a topology: the colour matrix, device tables, legend, summary.

Colours follow path quality: NVLink strongest (green) to SYS weakest (red).
Matrices wider than the terminal are split into blocks (GPU×GPU, GPU×NIC,
NIC×NIC; the NIC×GPU block mirrors GPU×NIC and is left out), each block
wrapped into column chunks that fit.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from ..model import (P2P_STATUS, PATH_DESCRIPTIONS, Matrix, Topology, int_runs,
                     path_kind, path_rank)
from ..model.pcie import PciPlacement
from ..safe import is_ascii_digits
from .cells import UNKNOWN_STYLE, c2c_state, cell_style, printable, text
from .grid import Grid, Lines, Parts
from .layout import Fitted

MISSING = "?"


def _shown(token: Optional[str]) -> str:
    """A matrix cell as printed: the token made printable (a pasted text may hold anything)."""
    return MISSING if token is None else printable(token)


#: An NV# below what every other GPU pair of an all-to-all NVLink node has (NV17 among NV18):
#: a lost link, not wiring, so not drawn as the healthy NV# are.
DEGRADED_STYLE = "yellow"


def _degraded(m: Matrix) -> Set[str]:
    """The NV# tokens of GPU pairs below the node's NV#, where every GPU pair is NVLinked
    (NVSwitch, or an all-to-all board): there one count is the design and a lower one a
    lost link.  A mesh (DGX-1: NV1 and NV2 by design, some pairs SYS) has none."""
    gpus = [i for i, d in enumerate(m.devices) if _is_gpu(str(d))]
    counts: Set[int] = set()
    for r in gpus:
        for c in gpus:
            if r == c:
                continue
            tok = m.cells[r][c] or ""
            if not (tok.startswith("NV") and is_ascii_digits(tok[2:])):
                return set()
            counts.add(int(tok[2:]))
    if len(counts) < 2:
        return set()
    top = max(counts)
    return {f"NV{n}" for n in counts if n < top}


def _style(token: Optional[str], p2p: bool, short: Set[str]) -> str:
    return DEGRADED_STYLE if token in short else cell_style(token, p2p)


def _cell_text(token: Optional[str], p2p: bool, short: Set[str]) -> Text:
    return Text(_shown(token), style=_style(token, p2p, short))


def _is_gpu(label: str) -> bool:
    return label.startswith("GPU") and is_ascii_digits(label[3:])


def _symmetric(m: Matrix) -> bool:
    n = len(m.devices)
    return all(m.cells[i][j] == m.cells[j][i] or None in (m.cells[i][j], m.cells[j][i])
               for i in range(n) for j in range(i + 1, n))


class _View:
    """What every block of one matrix shares: the devices' names, each cell's printed
    width, the NV# tokens drawn as degraded."""

    def __init__(self, m: Matrix, p2p: bool) -> None:
        self.m, self.p2p = m, p2p
        self.names = [printable(d) for d in m.devices]
        known: Dict[Optional[str], int] = {}
        for row in m.cells:
            for tok in row:
                if tok not in known:
                    known[tok] = len(_shown(tok))
        self.lens = [[known[tok] for tok in row] for row in m.cells]
        self.short = set() if p2p else _degraded(m)

    def width(self, c: int, rows: Sequence[int]) -> int:
        """Column ``c``'s width over ``rows``: its name or its widest cell."""
        lens = self.lens
        return max([len(self.names[c])] + [lens[r][c] for r in rows])


def _block(view: _View, rows: Sequence[int], cols: Sequence[int], title: str,
           width: int) -> List[RenderableType]:
    """One block of the matrix, split into column chunks that fit ``width``."""
    m, names, p2p, short = view.m, view.names, view.p2p, view.short
    label_w = max([len(names[r]) for r in rows] + [3])
    widths = {c: view.width(c, rows) for c in cols}
    chunks: List[List[int]] = []
    used = label_w + 4
    for c in cols:
        need = widths[c] + 1
        if chunks and used + need <= width:
            chunks[-1].append(c)
            used += need
        else:
            chunks.append([c])
            used = label_w + 4 + need
    tables: List[RenderableType] = []
    for chunk in chunks:
        t_title = title
        if len(chunks) > 1:
            first, last = names[chunk[0]], names[chunk[-1]]
            t_title += f" ({first})" if first == last else f" ({first}…{last})"
        tables.append(Text(t_title, style="bold", no_wrap=True, overflow="ellipsis"))
        if label_w + sum(widths[c] + 1 for c in chunk) <= width:
            tables.append(_block_lines(view, rows, chunk, label_w, widths))
            continue
        table = Table(box=None, pad_edge=False, padding=(0, 1, 0, 0), show_edge=False)
        table.add_column("", style="bold", no_wrap=True, min_width=label_w)
        for c in chunk:
            table.add_column(Text(names[c]), justify="center", no_wrap=True,
                             min_width=widths[c], header_style="bold")
        for r in rows:
            table.add_row(Text(names[r]), *[_cell_text(m.cells[r][c], p2p, short)
                                           for c in chunk])
        tables.append(table)
    return tables


def _block_lines(view: _View, rows: Sequence[int], chunk: Sequence[int], label_w: int,
                 widths: Dict[int, int]) -> RenderableType:
    """One chunk as lines of text, laid out exactly as the borderless table would lay it out
    (columns centred, one space between), without a table cell per matrix cell: a 144-device
    matrix has 20,000 cells, which a Rich table renders in seconds.  Each line is its parts
    (``grid.Parts``: where styles print nothing, no Text is made)."""
    m, names = view.m, view.names
    last = len(chunk) - 1
    head: List[Tuple[str, str]] = [(" " * label_w, "bold"), (" ", "bold")]
    for k, c in enumerate(chunk):
        name, w = names[c], widths[c]
        left = (w - len(name)) // 2
        head.append((" " * left + name + " " * (w - len(name) - left), "bold"))
        if k < last:
            head.append((" ", "bold"))
    lines: List[Parts] = [Parts(head)]
    cells: Dict[Tuple[Optional[str], int], Tuple[str, str]] = {}
    gap = (" ", "")
    for r in rows:
        parts: List[Tuple[str, str]] = [(names[r].ljust(label_w), "bold"), (" ", "bold")]
        for k, c in enumerate(chunk):
            tok, w = m.cells[r][c], widths[c]
            cell = cells.get((tok, w))
            if cell is None:
                shown = _shown(tok)
                left = (w - len(shown)) // 2
                cell = cells[(tok, w)] = (" " * left + shown + " " * (w - len(shown) - left),
                                          _style(tok, view.p2p, view.short))
            parts.append(cell)
            if k < last:
                parts.append(gap)
        lines.append(Parts(parts))
    return Lines(lines)


def matrix_tables(m: Matrix, width: int, p2p: bool = False) -> List[RenderableType]:
    """The matrix as one table when it fits, else as blocks and chunks."""
    n = len(m.devices)
    everything = list(range(n))
    view = _View(m, p2p)
    full_w = max(len(d) for d in view.names) + 4 + sum(
        view.width(c, everything) + 1 for c in everything)
    title = "P2P status" if p2p else "Topology matrix"
    if full_w <= width:
        return _block(view, everything, everything, title, width)
    gpus = [i for i, d in enumerate(m.devices) if _is_gpu(d)]
    others = [i for i, d in enumerate(m.devices) if not _is_gpu(d)]
    if not gpus or not others or not _symmetric(m):
        return _block(view, everything, everything, title, width)
    out = _block(view, gpus, gpus, "GPU ↔ GPU", width)
    out += _block(view, gpus, others, "GPU ↔ NIC", width)
    out += _block(view, others, others, "NIC ↔ NIC", width)
    return out


def _nearest(topo: Topology, label: str, candidates: Sequence[str]) -> Tuple[List[str], Optional[str]]:
    """Candidates with the best (lowest-rank) path from ``label``, and that path token."""
    best: List[str] = []
    best_tok = None
    best_rank = None
    for c in candidates:
        tok = topo.path(label, c)
        rank = path_rank(tok)
        if rank is None or rank == 0:
            continue
        if best_rank is None or rank < best_rank:
            best, best_tok, best_rank = [c], tok, rank
        elif rank == best_rank:
            best.append(c)
    return best, best_tok


def _styled(token: Optional[str]) -> Text:
    return Text(printable(token) or MISSING, style=cell_style(token))


def _norm(pair_count: Dict[Tuple[int, int], int], ngpus: int) -> int:
    """The NV# of an all-to-all node (every GPU pair linked: the highest count), else 0."""
    linked = [c for c in pair_count.values() if c]
    if ngpus < 2 or len(linked) < ngpus * (ngpus - 1) // 2:
        return 0
    return max(linked)


def gpu_table(topo: Topology) -> Table:
    nic_labels = [n.label for n in topo.nics]
    names = {n.label: n.name for n in topo.nics}
    table = Table(title="GPUs", title_justify="left", title_style="bold", box=None,
                  pad_edge=False, padding=(0, 2, 0, 0), show_edge=False)
    table.add_column("GPU", style="bold", no_wrap=True)
    table.add_column("CPU affinity", overflow="fold")
    table.add_column("NUMA", overflow="fold")
    table.add_column("GPU NUMA", no_wrap=True)
    table.add_column("NVLink", no_wrap=True)
    pcie = any(g.sysfs is not None for g in topo.gpus)
    if pcie:
        table.add_column("PCI", no_wrap=True)
        table.add_column("PCIe link", overflow="fold")
    if nic_labels:
        table.add_column("nearest NIC", overflow="fold")
    pair_count: Dict[Tuple[int, int], int] = {}
    for p in topo.nvlinks:  # first pair listed wins, as Topology.nvlink answers
        pair_count.setdefault((min(p.a, p.b), max(p.a, p.b)), p.count)
    norm = _norm(pair_count, len(topo.gpus))
    for g in topo.gpus:
        counts = [pair_count.get((min(g.index, o.index), max(g.index, o.index)))
                  for o in topo.gpus if o.index != g.index]
        linked = [c for c in counts if c]
        if topo.matrix is None or topo.matrix.source == "sysfs":
            nv = Text("unknown", style="dim")
        elif not linked:
            nv = Text("none", style="dim")
        else:
            lo, hi = min(linked), max(linked)
            label = f"NV{lo}" if lo == hi else f"NV{lo}–NV{hi}"
            # a GPU with a pair below the node's NV# (all-to-all) lost a link: not green
            nv = Text(f"{label} to {len(linked)}/{len(counts)}",
                      style=DEGRADED_STYLE if lo < norm else "green")
        row: List[RenderableType] = [
            text(g.label),
            text(g.cpu_affinity) if g.cpu_affinity else Text("—", style="dim"),
            text(g.numa_affinity) if g.numa_affinity else Text("—", style="dim"),
            text(g.gpu_numa_id) if g.gpu_numa_id is not None else Text("—", style="dim"),
            nv,
        ]
        if pcie:
            facts = g.sysfs
            row += [text(facts.pci_address) if facts is not None and facts.pci_address
                    else Text("—", style="dim"), pcie_link_text(facts)]
        if nic_labels:
            near, tok = topo.nearest_nics(g.index)
            label_of = {n.name: n.label for n in topo.nics}
            best = [label_of[x] for x in near]
            if best:
                shown = ", ".join(_nic_ref(b, names) for b in best[:3])
                if len(best) > 3:
                    shown += f" +{len(best) - 3}"
                row.append(Text.assemble(_styled(tok), " ", printable(shown)))
            else:
                row.append(Text("unknown", style="dim"))
        table.add_row(*row)
    return table


def pcie_link_text(facts: Optional[PciPlacement]) -> Text:
    """``Gen5 x16``, or current vs max (``Gen5 x8 of x16``, ``Gen3 of Gen5 x16``) from sysfs.

    A narrower link than both ends allow is red; a slower one yellow (GPUs
    lower their link speed when idle, so speed is judged only under load).
    """
    link = facts.link if facts is not None else None
    if link is None or link.current_gen is None and link.current_width is None:
        return Text("unknown (no link attributes)", style="dim")
    cg, cw, mg, mw = link.current_gen, link.current_width, link.max_gen, link.max_width
    cur = f"Gen{cg if cg is not None else '?'} x{cw if cw is not None else '?'}"
    shown = Text(printable(cur))
    if link.width_below_max or link.speed_below_max:
        shown.append(printable(
            f" (max Gen{mg if mg is not None else '?'} x{mw if mw is not None else '?'})"))
        hop = facts.narrowest_hop if facts is not None else None
        if link.width_below_max:
            shown.stylize("bold red")
        elif hop is not None and hop.speed_below_expected:
            shown.stylize("yellow")
    return shown


def _nic_ref(label: str, names: Dict[str, str]) -> str:
    name = names.get(label, label)
    return label if name == label else f"{label} ({name})"


def nic_table(topo: Topology) -> Table:
    gpu_labels = [g.label for g in topo.gpus]
    table = Table(title="NICs", title_justify="left", title_style="bold", box=None,
                  pad_edge=False, padding=(0, 2, 0, 0), show_edge=False)
    table.add_column("NIC", style="bold", no_wrap=True)
    table.add_column("device", no_wrap=True)
    table.add_column("nearest GPU", overflow="fold")
    for n in topo.nics:
        best, tok = _nearest(topo, n.label, gpu_labels)
        near: RenderableType
        if best:
            near = Text.assemble(_styled(tok), " ", printable(", ".join(best)))
        else:
            near = Text("unknown", style="dim")
        # a row labelled by its device name (mlx5_0, not NIC0) already names the device
        named = (n.name != n.label or n.sources.get("name") == "sysfs"
                 or not (n.label.startswith("NIC") and is_ascii_digits(n.label[3:])))
        table.add_row(text(n.label), text(n.name) if named else Text("unknown", style="dim"),
                      near)
    for bdf in _driverless(topo):
        # a NIC function on the bus with no RDMA device (mlx5_ib not bound): a NIC all the same
        table.add_row(text(bdf), Text("no RDMA driver", style="yellow"),
                      Text("unknown (no RDMA device)", style="dim"))
    return table


def _driverless(topo: Topology) -> List[str]:
    """PCI addresses of RDMA-capable NIC functions with no RDMA device (sysfs notes)."""
    return [n.subject for n in topo.notes if n.code == "sysfs.no_rdma_driver" and n.subject]


def legend(topo: Topology) -> Table:
    """The legend entries for the tokens that appear in the matrix."""
    m = topo.p2p if topo.matrix is None else topo.matrix
    p2p = topo.matrix is None
    present: List[str] = []
    if m is not None:
        for row in m.cells:
            for c in row:
                key = c
                if c is not None and not p2p and path_kind(c) == "NV":
                    key = "NV#"
                if key is not None and key not in present:
                    present.append(key)
    order = list(P2P_STATUS) if p2p else ["X", "NV#", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC"]
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for key in order:
        if key in present:
            desc = P2P_STATUS[key] if p2p else PATH_DESCRIPTIONS[key]
            sample = "NV18" if key == "NV#" else key
            table.add_row(Text("Legend:" if not table.row_count else "", style="bold"),
                          Text(f"{key:<4}", style=cell_style(sample, p2p)), "= " + desc)
    unknown = [k for k in present if k not in order]
    if unknown:
        table.add_row(Text("Legend:" if not table.row_count else "", style="bold"),
                      text(", ".join(unknown), style=UNKNOWN_STYLE),
                      "= not a known token (kept as printed)")
    return table


def summary(topo: Topology) -> Text:
    parts = [f"{len(topo.gpus)} GPU{'s' if len(topo.gpus) != 1 else ''}",
             f"{len(topo.nics)} NIC{'s' if len(topo.nics) != 1 else ''}"
             + (f" (+{len(_driverless(topo))} without an RDMA driver)" if _driverless(topo)
                else "")]
    n = len(topo.gpus)
    pairs = n * (n - 1) // 2
    if topo.matrix is not None and topo.matrix.source == "sysfs":
        parts.append("NVLink unknown (sysfs only)")
    elif topo.matrix is not None:
        linked = [p for p in topo.nvlinks if p.count > 0]
        counts = sorted({p.count for p in linked})
        what = (f"{len(linked)}/{pairs} GPU pairs NVLink-connected" if pairs
                else "one GPU (no GPU pairs)" if n == 1 else "no GPUs")
        if counts:
            what += " (" + ", ".join(f"NV{c}" for c in counts) + ")"
        known = {frozenset((p.a, p.b)) for p in topo.nvlinks}
        unknown = sum(1 for i, g in enumerate(topo.gpus) for h in topo.gpus[i + 1:]
                      if frozenset((g.index, h.index)) not in known
                      and topo.path(g.label, h.label) is None)
        if unknown:
            what += f", {unknown} unknown"  # not counted as unconnected: nobody said
        parts.append(what)
    elif topo.p2p is not None:
        ok = sum(1 for _, _, tok in topo.p2p.pairs() if tok == "OK")
        mode = f" ({topo.p2p.mode})" if topo.p2p.mode else ""
        if pairs:
            parts.append(f"P2P{mode} OK for {ok}/{pairs} GPU pairs")
    numa = topo.numa_nodes()
    ids = topo.numa_node_ids()
    if ids:
        parts.append(f"{len(ids)} NUMA node{'s' if len(ids) != 1 else ''} ({int_runs(ids)})")
    elif numa:
        parts.append(f"NUMA affinities {', '.join(printable(x) for x in numa)}")
    elif any("numa_affinity" in g.sources for g in topo.gpus):
        parts.append("NUMA unknown (N/A)")
    else:
        parts.append("NUMA not reported")
    g = topo.gds_text
    if g is not None and g.gpus:  # a pasted gdscheck -p: its GPU INFO lines, not model GPUs
        ok = sum(1 for x in g.gpus if x.supports_gds)
        parts.append(f"gdscheck -p lists {len(g.gpus)} GPU{'s' if len(g.gpus) != 1 else ''}, "
                     f"{ok} supporting GDS")
    return text(" · ".join(parts), style="bold")


def fabric_lines(topo: Topology) -> Optional[Text]:
    """The NVLink fabric block (NVML, or a pasted ``nvidia-smi -q`` Fabric block): one line
    per distinct state, status, health, clique and cluster; ``None`` where no GPU reports
    one."""
    rows: Dict[Tuple, List[int]] = {}
    for g in topo.gpus:
        rec = g.nvml if g.nvml is not None and g.nvml.fabric is not None else g.nvml_text
        fab = rec.fabric if rec is not None else None
        if fab is None or fab.state == "not_supported":
            continue
        key = (fab.state, fab.status, fab.health_summary, fab.clique_id, fab.cluster_uuid)
        rows.setdefault(key, []).append(g.index)
    if not rows:
        return None
    out = Text("NVLink fabric", style="bold")
    for (state, status, health, clique, cluster), idx in rows.items():
        bad = state != "completed" or status not in (None, "success") or health in (
            "unhealthy", "limited_capacity")
        what = [str(state) + (f"/{status}" if status else "")]
        if health and health != "not_supported":
            what.append(str(health))
        if clique is not None:
            what.append(f"clique {clique}")
        if not cluster:
            what.append("no cluster UUID")
        out.append("\n")
        out.append(printable(f"  {int_runs(idx, 'GPU', pairs=True)}: " + " · ".join(what)),
                   style="bold red" if bad else "green")
        if cluster:  # on its own line: an identifier is never wrapped at 80 columns
            out.append("\n")
            out.append(printable(f"    cluster {cluster}"), style="bold red" if bad else "green")
    return out


def c2c_lines(topo: Topology) -> Optional[Text]:
    """The NVLink-C2C block (GPU to its Grace CPU; NVML): one line per distinct mode, links
    active of present and bandwidth; ``None`` where no GPU reports C2C."""
    rows: Dict[Tuple, List[int]] = {}
    for g in topo.gpus:
        c = g.nvml.c2c if g.nvml is not None else None
        if c is None:
            continue
        key = (c.enabled, c.links_active, c.link_count, c.bandwidth_gbps, tuple(c.down))
        rows.setdefault(key, []).append(g.index)
    if not rows:
        return None
    out = Text("NVLink-C2C (GPU to Grace CPU)", style="bold")
    for (enabled, active, count, bw, down), idx in rows.items():
        bad = enabled is False or bool(down) or (enabled is True and count == 0)
        what = c2c_state(enabled, count, active)
        if down and enabled is not False:
            what.append("down: " + int_runs(list(down)))
        if bw is not None:
            what.append(f"{bw:g} GB/s")
        out.append("\n")
        out.append(printable(f"  {int_runs(idx, 'GPU', pairs=True)}: " + " · ".join(what)),
                   style="bold red" if bad else "green")
    return out


def notes(topo: Topology) -> Optional[Text]:
    if not topo.notes:
        return None
    out = Text()
    for i, n in enumerate(topo.notes):
        if i:
            out.append("\n")
        style = "yellow" if n.level == "warning" else "dim"
        out.append(printable(f"{n.level}: "), style=style)
        out.append(printable(n.message))
    return out


def render(topo: Topology, width: int) -> RenderableType:
    """Everything ``nvtopo show`` prints, as one Rich renderable."""
    parts: List[RenderableType] = []
    # a tree given with --sysfs-root is another machine's (or a copy): never "live"
    root = topo.origin.sysfs_root
    origin = topo.origin.file or (f"sysfs tree {root}" if root else None) \
        or topo.origin.kind
    host = topo.host.hostname
    head = Text("nvtopo", style="bold")
    if origin:
        head.append(printable(f" · {origin}"))
    if host:
        head.append(printable(f" · host {host}"))
    parts.append(head)
    m = topo.matrix if topo.matrix is not None else topo.p2p
    if m is not None:
        for t in matrix_tables(m, width, p2p=topo.matrix is None):
            if isinstance(t, Text):
                parts.append(Text(""))
            parts.append(t)
    if topo.gpus and (topo.matrix is not None or any(g.sysfs is not None for g in topo.gpus)):
        # GPUs only sysfs knows (no RDMA device, so no path matrix) are listed all the same
        parts += [Text(""), Fitted(gpu_table(topo))]
    if topo.nics or _driverless(topo):
        parts += [Text(""), Fitted(nic_table(topo))]
    from .mesh import mesh_table  # the WireGuard mesh (docs/mesh.md); None without one

    mesh = mesh_table(topo)
    if mesh is not None:
        parts += [Text(""), Fitted(mesh)]
    from .storage import storage_parts  # NVMe drives (docs/storage.md)
    parts += storage_parts(topo)
    fabric = fabric_lines(topo)
    if fabric is not None:
        parts += [Text(""), fabric]
    c2c = c2c_lines(topo)
    if c2c is not None:
        parts += [Text(""), c2c]
    from .imex import imex_lines  # the IMEX domain (docs/imex.md); None without one

    imex = imex_lines(topo)
    if imex is not None:
        parts += [Text(""), imex]
    if m is not None:
        parts += [Text(""), Grid(legend(topo))]
    note_text = notes(topo)
    if note_text is not None:
        parts += [Text(""), note_text]
    parts += [Text(""), summary(topo)]
    elsewhere = _read_better_by(topo)
    if elsewhere is not None:
        parts.append(elsewhere)
    return Lines(parts)  # (a Group of them: its lines of text at once where they can be)


def _read_better_by(topo: Topology) -> Optional[Text]:
    """A paste another command reads better, said in one line: link states pasted (``nvidia-smi
    nvlink -s``, ``dcgmi nvlink -s``) with no path matrix are ``links``' to show."""
    if _no_matrix(topo) and topo.origin.file and any(
            g.nvml_text is not None for g in topo.gpus):
        return Text.assemble(("link states: ", "bold"),
                             printable(f"nvtopo links --from {topo.origin.file}"))
    return None


def _no_matrix(topo: Topology) -> bool:
    return topo.matrix is None and topo.p2p is None


def print_topology(topo: Topology, console: Console) -> None:
    console.print(render(topo, console.width))
