"""Whether a directory can be a sysfs tree (``--sysfs-root DIR``), and saying why not.

:func:`check_root` refuses what is no sysfs tree with one line (exit 2); the capture
records the same reason (:func:`why_not_sysfs`) rather than raising.
"""

from __future__ import annotations

import os
import shlex
import stat
from typing import Optional

from ...errors import NvtopoError

#: Directories only a sysfs tree has (at least one must be there; see :func:`why_not_sysfs`).
SYSFS_MARKERS = ("devices/system", "bus/pci/devices", "class/infiniband")


def why_not_sysfs(root: str) -> Optional[str]:
    """Why directory ``root`` cannot be a sysfs tree, or ``None`` when it can.

    The rule: ``devices/`` is a directory, so is ``bus/`` or ``class/``, and so
    is at least one of :data:`SYSFS_MARKERS` (``devices/system``,
    ``bus/pci/devices``, ``class/infiniband``).  Every real /sys has all of
    them; a copied or minimal tree needs only what it is read for.  /proc is
    refused: it has ``bus/`` but its ``devices`` is a file.
    """
    def isdir(rel: str) -> bool:
        try:
            return stat.S_ISDIR(os.stat(os.path.join(root, rel)).st_mode)
        except PermissionError:
            raise
        except (OSError, ValueError):  # absent, not a directory, a NUL in the path
            return False

    def anydir(*rels: str) -> bool:
        # A directory that may not be searched is "permission denied" only when none of
        # the others is there: one unreadable marker does not refuse a tree.
        denied: Optional[PermissionError] = None
        for rel in rels:
            try:
                if isdir(rel):
                    return True
            except PermissionError as exc:
                denied = denied or exc
        if denied is not None:
            raise denied
        return False

    try:
        if not anydir("devices"):
            return "no devices/ directory"
        if not anydir("bus", "class"):
            return "devices/ but neither bus/ nor class/"
        if not anydir(*SYSFS_MARKERS):
            return f"none of {', '.join(m + '/' for m in SYSFS_MARKERS)}"
    except PermissionError as exc:
        return PERMISSION_DENIED + _denied_where(root, exc)
    return None


#: What :func:`why_not_sysfs` and :func:`check_root` say of a tree they may not look into:
#: not "absent", not "no sysfs tree".
PERMISSION_DENIED = "permission denied"


def _denied_where(root: str, exc: OSError) -> str:
    """`` on DIR/`` for the directory that may not be searched when ``stat(DIR/x)`` is denied,
    or nothing when that directory is ``root`` itself."""
    path = exc.filename if isinstance(exc.filename, str) else ""
    parent = os.path.dirname(os.path.normpath(path)) if path else ""
    if not parent or os.path.normpath(parent) == os.path.normpath(root):
        return ""
    rel = os.path.relpath(parent, root)
    return f" on {path_shown(rel if not rel.startswith('..') else parent)}/"


def looks_like_sysfs(root: str) -> bool:
    """True when directory ``root`` passes the rule of :func:`why_not_sysfs`."""
    return why_not_sysfs(root) is None


def path_shown(root: str) -> str:
    """A path as the user could type it: an empty or odd path stays visible, on one line."""
    return shlex.quote(root) if root.isprintable() else repr(root)


def _option_shown(root: str) -> str:
    return f"--sysfs-root {path_shown(root)}"


def check_root(root: str) -> None:
    """Raise :class:`NvtopoError` when ``--sysfs-root`` is no sysfs tree (exit 2, one line)."""
    where = _option_shown(root)
    try:
        st = os.stat(root) if root else None
    except PermissionError:
        raise NvtopoError(PERMISSION_DENIED, where=where) from None
    except (OSError, ValueError):
        st = None
    if st is None:
        raise NvtopoError("no such directory", where=where)
    if not stat.S_ISDIR(st.st_mode):
        raise NvtopoError("is not a directory (a sysfs tree such as /sys is wanted)",
                          where=where)
    why = why_not_sysfs(root)
    if why is not None and why.startswith(PERMISSION_DENIED):
        raise NvtopoError(f"{why} (run as a user who may read the tree, or copy it)",
                          where=where)
    if why is not None:
        raise NvtopoError(f"is not a sysfs tree ({why}); the directory must play the role "
                          "of /sys", where=where)
