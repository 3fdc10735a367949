"""The options commands share, declared once: ``--from``, ``--sysfs-root``, ``--timeout``,
``-o/--output``, ``--format``, ``--layout``/``--layout-file``; and the layout they name.

Each is a function returning the ``typer.Option`` (a command may word the help for what
it reads, never the option itself).
"""

from __future__ import annotations

import enum
from typing import Any, List, Optional

import typer

from ..errors import ExitStatus, NvtopoError


class Format(str, enum.Enum):
    table = "table"
    json = "json"


class ShowFormat(str, enum.Enum):
    table = "table"
    json = "json"
    svg = "svg"
    html = "html"
    rich_svg = "rich-svg"


class CheckFormat(str, enum.Enum):
    table = "table"
    json = "json"
    prometheus = "prometheus"
    svg = "svg"
    html = "html"
    rich_svg = "rich-svg"


class AuditFormat(str, enum.Enum):
    table = "table"
    json = "json"
    prometheus = "prometheus"


# --- --from -----------------------------------------------------------------------------

FROM_HELP = ("Read this file instead of probing (recognised by content, not by name): a "
             "snapshot (`nvtopo snapshot`, `.json` or gzip-compressed `.json.gz`), or text "
             "pasted from a ticket: `nvidia-smi topo -m`, `nvidia-smi nvlink -s/-e/-c/-R`, "
             "`nvidia-smi -q` or its `-q -x` XML, `dcgmi nvlink -s`, `ibstat`, `ibv_devinfo` "
             "or `ibstatus`, `gdscheck -p`; several in one file are read together "
             "(docs/ticket-inputs.md). '-' reads standard input.")
#: ``layouts capture``: a layout is made from what the topology inputs say.
TOPOLOGY_FROM_HELP = ("Read this file instead of probing: a snapshot (`nvtopo snapshot`, "
                      "`.json` or gzip-compressed `.json.gz`), a pasted `nvidia-smi topo -m`, "
                      "or pasted `nvidia-smi nvlink -s/-e/-c/-R` or `nvidia-smi -q` text "
                      "(recognised by content, not by name). '-' reads standard input.")


def from_option(help: str = FROM_HELP) -> Any:
    return typer.Option(None, "--from", "-f", metavar="FILE", help=help)


# --- --sysfs-root ---------------------------------------------------------------------------

SYSFS_ROOT_HELP = ("Read this directory as /sys (live probing only): a host /sys mounted "
                   "elsewhere in a container, or a copied tree audited offline.")


def sysfs_root_option(help: str = SYSFS_ROOT_HELP) -> Any:
    return typer.Option(None, "--sysfs-root", metavar="DIR", help=help)


# --- --timeout --------------------------------------------------------------------------

#: Longest --timeout accepted (an hour): a bounded wait, and no overflow in thread joins.
MAX_TIMEOUT = 3600.0
#: Shortest --timeout accepted.
MIN_TIMEOUT = 0.1
TIMEOUT_HELP = ("Seconds the live probes may take in all (live probing only): nvidia-smi, "
                "the NVML calls, the sysfs and host reads run side by side under this one "
                "deadline; what has not answered by then is given up and reported as "
                "incomplete, never as a fault.")


def timeout_seconds(value: Any) -> float:
    """The ``--timeout`` value: a plain decimal number of seconds, MIN_TIMEOUT to MAX_TIMEOUT.

    Anything else (``nan``, ``inf``, ``1e309``, a negative or non-ASCII number, a word) is
    one error line and exit status 2, before any probing.  Click's own range check lets NaN
    through (every comparison with NaN is false), so the check is made here.
    """
    from ..safe import ascii_float, printable
    from .io import err

    seconds = ascii_float(value)
    if seconds is not None and MIN_TIMEOUT <= seconds <= MAX_TIMEOUT:
        return seconds
    shown = printable(value)
    shown = shown if len(shown) <= 40 else shown[:40] + "..."
    err(str(NvtopoError(f"'{shown}' is not a number of seconds from {MIN_TIMEOUT:g} to "
                        f"{MAX_TIMEOUT:g}", where="--timeout")))
    raise typer.Exit(int(ExitStatus.ERROR))


def timeout_option(help: str = TIMEOUT_HELP) -> Any:
    return typer.Option(30.0, "--timeout", parser=timeout_seconds, metavar="SECONDS",
                        help=f"{help} [{MIN_TIMEOUT:g} to {MAX_TIMEOUT:g}]")


# --- -o/--output -------------------------------------------------------------------------

OUTPUT_HELP = ("Write to FILE instead of standard output: a file atomically (a temporary file "
               "in the same directory, then a rename; a link's target, keeping its mode), a "
               "device or FIFO directly. '-': standard output.")


def output_option(help: str = OUTPUT_HELP) -> Any:
    return typer.Option(None, "--output", "-o", metavar="FILE", help=help)


# --- --format ------------------------------------------------------------------------------


def layout_names(incomplete: str) -> List[str]:
    """Shell completion: the bundled layouts' names starting with what was typed."""
    from .. import layouts

    return [n for n in layouts.names() if n.startswith(incomplete)]


def example_names(incomplete: str) -> List[str]:
    """Shell completion of ``check --example``: the bundled examples (snapshots and texts)
    starting with what was typed."""
    from .. import examples

    return [n for n in examples.snapshot_names() if n.startswith(incomplete)]


def text_example_names(incomplete: str) -> List[str]:
    """Shell completion of ``show --example``: the bundled texts."""
    from .. import examples

    return [n for n in examples.names() if n.startswith(incomplete)]


def format_option(default: Optional[enum.Enum], help: str) -> Any:
    return typer.Option(default, "--format", metavar="FORMAT", help=help)


# --- --layout / --layout-file --------------------------------------------------------------

LAYOUT_HELP = ("The layout to check against (`nvtopo layouts` lists them); auto picks by GPU "
               "name and count, else by the shape of the matrix.")
LAYOUT_FILE_HELP = ("Check against your own layout file (JSON; see `nvtopo layouts capture`). "
                    "'-' reads standard input.")


def quiet_option() -> Any:
    return typer.Option(False, "--quiet", "-q",
                        help="No progress line on standard error (drawn only when it is a "
                             "terminal, and erased when the work ends).")


def layout_option(help: str = LAYOUT_HELP) -> Any:
    return typer.Option("auto", "--layout", "-l", metavar="NAME|auto", help=help,
                        autocompletion=lambda incomplete: layout_names(incomplete) + [
                            a for a in ["auto"] if a.startswith(incomplete)])


def layout_file_option(help: str = LAYOUT_FILE_HELP) -> Any:
    return typer.Option(None, "--layout-file", metavar="FILE", help=help)


def thresholds_option() -> Any:
    return typer.Option(
        None, "--thresholds", metavar="FILE",
        help="Error-counter thresholds per node class (a JSON file: docs/checks.md), above "
             "the layout's and the defaults (nvtopo checks nvlink.errors).")


def thresholds(path: Optional[str]) -> Any:
    """The ``--thresholds FILE`` file read and validated (None without one), before any
    input is read or probed."""
    if path is None:
        return None
    from ..checks import thresholds as thresholds_mod

    return thresholds_mod.read(path)


def _bundled(name: str, where: str) -> Any:
    """A bundled layout by name; an unknown name is blamed on what named it (the ``--layout``
    option, or the argument of ``layouts show``), with the closest names."""
    import difflib

    from .. import layouts

    if name in layouts.names():
        return layouts.load(name)
    close = difflib.get_close_matches(name, layouts.names(), n=2, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise NvtopoError(f"no bundled layout named {name!r}; {hint}`nvtopo layouts` lists them",
                      where=where)


def layout(name: Optional[str], path: Optional[str], command: str, *,
           named: bool = False, stdin_taken: bool = False) -> Any:
    """The layout ``--layout NAME``/``--layout-file FILE`` (or a NAME argument: ``named``)
    name, read once and validated, before any input is read or probed: a
    :class:`~nvtopo.layouts.Layout`, or ``"auto"`` for ``--layout auto`` (the default).

    ``--layout-file -`` reads standard input (once: a pipe cannot be read twice), unless
    ``--from -`` reads it (``stdin_taken``).
    """
    from .. import layouts

    if named:
        if name is not None and path is not None:
            raise NvtopoError("give a layout name or --layout-file, not both", where=command)
        if name is None and path is None:
            raise NvtopoError("name a layout (nvtopo layouts lists them) or give "
                              "--layout-file", where=command)
    elif name not in (None, "auto") and path is not None:
        raise NvtopoError("use either --layout or --layout-file, not both", where=command)
    if path is None:
        return "auto" if not named and name in (None, "auto") else _bundled(
            str(name), command if named else "--layout")
    from .. import snapshot

    if stdin_taken and path in snapshot.STDIN_NAMES:
        raise NvtopoError("standard input is read once: give --from or --layout-file a file, "
                          "not both '-'", where="--layout-file")
    return layouts.load_file(path)
