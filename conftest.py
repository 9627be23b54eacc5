"""Test-session settings shared by every test directory."""

import os

from hypothesis import HealthCheck, settings

# ci: derandomized and bounded, so CI is repeatable; dev: the default for
# local runs; nightly: many more examples. Choose with HYPOTHESIS_PROFILE.
settings.register_profile("ci", derandomize=True, max_examples=60, deadline=None, print_blob=True)
settings.register_profile("dev", max_examples=40, deadline=None)
settings.register_profile("nightly", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Tests talk only to servers on 127.0.0.1: never let a cloud SDK's default
# credential chain probe an instance-metadata address, nor pick up a
# developer's real credentials.
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
os.environ["AWS_CONFIG_FILE"] = os.devnull
for _name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
    os.environ.pop(_name, None)
os.environ["GCE_METADATA_HOST"] = "127.0.0.1:1"
os.environ["GCE_METADATA_IP"] = "127.0.0.1:1"
