"""The cyclic collector while a fleet command reads its files (``nvtopo/pool.py``): its first
threshold is raised to ``FLEET_GEN0`` for the loop in this process and for good in a worker,
and put back after the loop however it ends; the answers are the same."""

from __future__ import annotations

import gc
import json

import pytest

from nvtopo import audit, layouts, pool
from nvtopo.commands import cluster
from nvtopo.simulate import simulate


@pytest.fixture()
def default_threshold():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    lay = layouts.load("gb200-nvl72-tray")
    for i in range(2):
        doc = simulate(lay, [], seed=i, hostname=f"tray{i}")
        (root / f"tray{i}.json").write_text(json.dumps(doc))
    return root


def test_raised_in_the_loop_and_put_back(default_threshold):
    with pool.fleet_collections():
        assert gc.get_threshold() == (pool.FLEET_GEN0, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)
    with pytest.raises(RuntimeError):
        with pool.fleet_collections():
            raise RuntimeError("a renderer failed")
    assert gc.get_threshold() == (700, 10, 10)
    gc.set_threshold(100_000, 5, 5)  # a higher threshold someone chose is kept
    with pool.fleet_collections():
        assert gc.get_threshold() == (100_000, 5, 5)


def test_a_worker_keeps_it(default_threshold):
    pool.fleet_worker()
    assert gc.get_threshold() == (pool.FLEET_GEN0, 10, 10)


@pytest.mark.parametrize("read", [
    lambda paths: audit.run(paths, jobs=1),
    lambda paths: cluster.read(paths, jobs=1),
], ids=["audit", "cluster"])
def test_audit_and_cluster_read_with_it_then_put_it_back(default_threshold, two_nodes, read):
    seen = []
    for result in read([str(two_nodes)]):
        seen.append((gc.get_threshold()[0], result))
    assert [t for t, _ in seen] == [pool.FLEET_GEN0] * 2
    assert gc.get_threshold() == (700, 10, 10)
    it = read([str(two_nodes)])
    next(it)
    it.close()  # the caller stopped early (an error while printing, a closed pipe)
    assert gc.get_threshold() == (700, 10, 10)
