"""The bundled example snapshots carry a model cache this nvtopo uses.

A stale cache is not wrong (the model is re-derived from the evidence), only slow: every
``check --example`` paid the derivation.  When this fails, run
``python tests/regenerate_examples.py`` and commit the examples it writes.
"""

from __future__ import annotations

import pytest

from nvtopo import examples, snapshot


@pytest.mark.parametrize("name", ["dgx-h100-healthy", "dgx-h100-faulty"])
def test_example_snapshot_cache_is_current(name):
    assert name in examples.snapshot_names()
    with examples.path(name) as path:  # as check --example opens it
        opened = snapshot.open_input(snapshot.Input(path=path))
    assert opened.cached is True, (
        f"{name}: the sealed cache is stale (derivation code changed since it was written): "
        "run `python tests/regenerate_examples.py` and commit nvtopo/examples/")
    assert len(opened.model.gpus) == 8


def test_examples_read_through_importlib_resources_where_no_file_is_there(monkeypatch):
    """An install whose package is no directory of files (a zip) reads the examples through
    importlib.resources; as files (pip, a checkout) they are opened directly, without
    importing it (start-up)."""
    import os

    from nvtopo import examples

    direct = examples.read("dgx-h100")
    with examples.path("dgx-h100-healthy") as p:
        direct_snap = open(p, "rb").read()
    monkeypatch.setattr(examples.os.path, "isfile", lambda p: False)
    assert examples.read("dgx-h100") == direct
    with examples.path("dgx-h100-healthy") as p:
        assert os.path.exists(p) and open(p, "rb").read() == direct_snap
