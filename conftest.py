"""Test-session settings shared by every test directory."""

import os

from hypothesis import HealthCheck, settings

# ci: derandomized and bounded, so CI is repeatable; dev: the default for
# local runs; nightly: many more examples. Choose with HYPOTHESIS_PROFILE.
settings.register_profile("ci", derandomize=True, max_examples=60, deadline=None, print_blob=True)
settings.register_profile("dev", max_examples=40, deadline=None)
settings.register_profile("nightly", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
