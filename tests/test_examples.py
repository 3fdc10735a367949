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
