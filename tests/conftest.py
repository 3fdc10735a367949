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
import signal

import pytest
from hypothesis import settings

# A shell without job control (a CI script's `cmd &`) starts its background commands with
# SIGINT ignored, and an ignored signal stays ignored in every program they start: the tests
# that interrupt an nvtopo process with SIGINT would then see nvtopo keep it ignored (as it
# must, for `nohup`).  Tests start their processes as a terminal would: SIGINT at its default.
if hasattr(signal, "SIGINT") and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

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
    "test_slurm_forms_real",
    "test_properties",  # hypothesis soaks
    "test_nvml_damage",  # every recorded value damaged every way
    "test_screens", "test_widths",  # every golden screen at every width
    "test_messages",  # every stderr message capture at 80 and 200 columns
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
    "test_probe_incomplete::test_the_largest_simulated_domain_reads_back",  # 144 GPUs, ~15 s
    "test_partial_evidence::test_excerpt_never_worsens_the_matrix_verdict",
    "test_nvml_recording::test_simulated_recording_equals_the_live_capture_through_pynvml",
    "test_probe_imports::test_twenty_fresh_live_snapshots_lose_no_probe",
    "test_streams::test_every_help_prints_under_any_encoding",
    "test_schemas::test_every_command_on_a_faulty_dgx_h100",
    "test_layouts_select::test_every_bundled_layouts_healthy_simulation_passes_check_with_layout_auto",
    "test_simulate::test_simulate_takes_any_layout_it_reads_or_refuses_it_in_one_line",
    # scale and bound soaks: the largest inputs, each a few seconds of CPU
    "test_collect_slurm::test_a_partition_of_ten_thousand_nodes_is_asked_of_sinfo_in_pieces",
    "test_svg::test_switch_bar_scales_to_a_72_gpu_domain",
    "test_pasted_facts::test_a_paste_of_many_gpus_is_judged_in_bounded_time",
    "test_cluster_fabric::test_a_switch_of_many_peers_and_a_leaf_of_many_nodes_are_linear",
    "test_hostile_parsers::test_a_legend_wrapped_over_many_lines_is_linear_and_capped",
    "test_dcgmi_text::test_large_input_is_read_in_bounded_time_and_size",
    "test_gzip_snapshots::test_a_gzip_bomb_never_costs_more_than_the_bound",
    "test_round_trip::test_control_characters_past_the_json_bound_are_refused_not_written",
    "test_simulate::test_a_72_gpu_nvlink_domain",
    "test_watch::test_sigterm_between_rounds_ends_the_loop_with_0",  # a real process, waited on
    # every layout, fixture, tree or recording swept (the core tier keeps the same rule
    # on fewer inputs: the cache, proof and derivation tests of test_snapshot_cache,
    # test_proof and test_simulate; test_check_every_format and the audit table for escaping;
    # the CLI runner validates every JSON document any core test prints)
    "test_snapshot_cache::test_cache_of_every_healthy_layout_equals_rederiving",
    "test_simulate::test_healthy_node_every_source_derives_and_agrees",
    "test_proof::test_healthy_node_has_no_error",
    "test_injection::test_links_ib_and_capture",
    "test_injection::test_show_every_format",
    "test_schemas::test_sysfs_trees",
    "test_schemas::test_nvml_recordings",
    "test_round_trip::test_every_fixture_round_trips",
})
#: Words in a test's name that make it a sweep or a soak.
SLOW_WORDS = ("fuzz", "mutated", "never_crash", "megabytes", "soak")


def slow_tier(module: str, name: str) -> bool:
    """Whether the test ``module::name`` (name without parameters) is in the slow tier."""
    return (module in SLOW_MODULES or f"{module}::{name}" in SLOW_TESTS
            or any(w in name for w in SLOW_WORDS))


#: Examples a hypothesis test draws in the core tier, at most.  A test that asks for more gets
#: a twin in the slow tier (``test_x_all_examples``) that draws all of them.
CORE_EXAMPLES = 20


def _hypothesis_settings(item):
    """The settings of a hypothesis test item (None for any other test)."""
    fn = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
    return getattr(fn, "_hypothesis_internal_use_settings", None)


def _all_examples_twin(item):
    """The same test, parameters and fixtures, named ``test_x_all_examples[params]``."""
    base = f"{item.originalname}_all_examples"
    params = item.name[len(item.originalname):]  # "" or "[...]"
    twin = pytest.Function.from_parent(
        item.parent, name=base + params, callspec=getattr(item, "callspec", None),
        callobj=item.obj, fixtureinfo=item._fixtureinfo, originalname=base)
    twin.add_marker(pytest.mark.slow)
    return twin


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest's hook signature
    twins = []
    for item in items:
        module = os.path.splitext(os.path.basename(str(item.fspath)))[0]
        name = getattr(item, "originalname", None) or item.name.split("[", 1)[0]
        if slow_tier(module, name):
            item.add_marker(pytest.mark.slow)
            continue
        found = _hypothesis_settings(item)
        if found is not None and found.max_examples > CORE_EXAMPLES:
            item.stash[_CORE_CAP] = CORE_EXAMPLES
            twins.append(_all_examples_twin(item))
    items.extend(twins)


#: On a core-tier item: the examples it may draw.
_CORE_CAP = pytest.StashKey[int]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A core-tier hypothesis test draws at most CORE_EXAMPLES (its twin draws them all)."""
    cap = item.stash.get(_CORE_CAP, None)
    if cap is None:
        yield
        return
    fn = getattr(item.obj, "__func__", item.obj)
    full = fn._hypothesis_internal_use_settings
    fn._hypothesis_internal_use_settings = settings(full, max_examples=cap)
    try:
        yield
    finally:
        fn._hypothesis_internal_use_settings = full
