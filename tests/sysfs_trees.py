"""Fixture trees (fixtures/sysfs/*.sysfs) materialised once per test session.

Trees are written to a RAM-backed directory (/dev/shm) where there is one:
creating ~1,400 small files per tree is slow on some disks.  Tests only read
the trees.
"""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from nvtopo import fakesys

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sysfs"
_BASE = None
_TREES = {}


def scratch_dir(prefix="nvtopo-sysfs-"):
    """A fresh directory, RAM-backed where possible, removed at exit."""
    global _BASE
    if _BASE is None:
        shm = "/dev/shm"
        where = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
        _BASE = tempfile.mkdtemp(prefix=prefix, dir=where)
        atexit.register(shutil.rmtree, _BASE, True)
    return tempfile.mkdtemp(dir=_BASE)


def tree(name):
    """(root, injected read errors) of a fixture tree."""
    if name not in _TREES:
        root = scratch_dir()
        faults = fakesys.load_file(str(FIXTURES / f"{name}.sysfs"), root)
        _TREES[name] = (root, faults)
    return _TREES[name]
