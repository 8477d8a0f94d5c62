"""The smallest recipe cannbuild reads: one repo, one build step whose `env` the test
chooses (a hostile value, a secret), for the cases that render recipe values."""

from __future__ import annotations

TEMPLATE = """
[recipe]
name = "tiny"
train = "8.5"
opbase = "source"

[repos.lib]
url = "https://example.invalid/lib.git"
tag = "v1"

[[steps]]
name = "build"
repo = "lib"
command = "steps/build.j2"
env = {{ {env} }}

[validate]
library = "lib.so"
symbols = []
"""


def tiny_recipe(env: str) -> str:
    """The recipe's text, its step's env table holding `env` (TOML `KEY = value, ...`)."""
    return TEMPLATE.format(env=env)
