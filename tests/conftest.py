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
