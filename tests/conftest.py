"""Hypothesis profiles for the suite.

On a developer's machine the property and fuzz tests draw fresh random examples on each
run, so every run explores new input (that is how the lowercase-letter case of the dcgmi
parser was found).  Under CI (``CI`` set, as ``.ci/run`` is run) they are derandomized: the
same examples every run, so a submission's verdict does not depend on the draw.  Soak the
fuzzers locally (plain ``pytest`` several times, or ``HYPOTHESIS_PROFILE=dev``) before a
submission; every failure they find becomes a named test.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                      or ("ci" if os.environ.get("CI") else "dev"))


# --- the slow tier -----------------------------------------------------------------------------
# The README's test command (plain `pytest -q`) runs the core tier: every behaviour once, in
# about 5 minutes of CPU on 2 cores.  The slow tier holds the exhaustive and the soaking tests
# (fuzzers, damage and mutation sweeps, every layout / fault / golden width, the real engines,
# fresh-process loops); `pytest -m slow` runs it and `.ci/run` runs both (docs/testing.md §1).
# A test belongs here by its module or by its name, never by being flaky.

#: Modules that are slow tiers as a whole.
SLOW_MODULES = frozenset({
    "test_cache_validation",  # every mistyped key path of a resealed cache
    "test_collect_slurm_real", "test_collect_ray_real", "test_cluster_slurm_real",  # engines
    "test_properties",  # hypothesis soaks
    "test_nvml_damage",  # every recorded value damaged every way
    "test_screens", "test_widths",  # every golden screen at every width
    "test_regex_budget",  # every regex timed on hostile input
    "test_json_fuzz",  # mutated pastes through every JSON command
    "test_signals",  # real worker pools signalled
    "test_layout_cuts",  # every cut of every 8-GPU corpus board
})
#: Single tests that sweep (module::function).
SLOW_TESTS = frozenset({
    "test_proof::test_one_fault_gives_exactly_its_finding",  # every fault kind, simulated
    "test_proof::test_two_faults_on_distinct_subjects_give_exactly_both_findings",
    "test_schemas::test_simulated_healthy_node_of_every_layout",
    "test_partial_evidence::test_excerpt_never_worsens_the_matrix_verdict",
    "test_nvml_recording::test_simulated_recording_equals_the_live_capture_through_pynvml",
    "test_probe_imports::test_twenty_fresh_live_snapshots_lose_no_probe",
    "test_streams::test_every_help_prints_under_any_encoding",
    "test_schemas::test_every_command_on_a_faulty_dgx_h100",
    "test_layouts_select::test_every_bundled_layouts_healthy_simulation_passes_check_with_layout_auto",
    "test_simulate::test_simulate_takes_any_layout_it_reads_or_refuses_it_in_one_line",
})
#: Words in a test's name that make it a sweep or a soak.
SLOW_WORDS = ("fuzz", "mutated", "never_crash", "megabytes", "soak")


def slow_tier(module: str, name: str) -> bool:
    """Whether the test ``module::name`` (name without parameters) is in the slow tier."""
    return (module in SLOW_MODULES or f"{module}::{name}" in SLOW_TESTS
            or any(w in name for w in SLOW_WORDS))


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest's hook signature
    import pytest

    for item in items:
        module = os.path.splitext(os.path.basename(str(item.fspath)))[0]
        name = getattr(item, "originalname", None) or item.name.split("[", 1)[0]
        if slow_tier(module, name):
            item.add_marker(pytest.mark.slow)
