"""A small recipe with two buildable repos beside a source, the shape of a train that builds
ops-transformer and a sibling: each repo its own vendor suffix, ops and validation, one
shared build template that renders `{{ repo }}` and `{{ ops }}`, opbase pinned by both."""

from __future__ import annotations

from pathlib import Path

RECIPE = """
[recipe]
name = "two"
train = "9.0"
opbase = "source"
socs = ["ascend910b"]
default_repos = ["ops-alpha"]

[repos.opbase]
url = "https://example.invalid/opbase.git"
tag = "v1"

[repos.ops-alpha]
url = "https://example.invalid/ops-alpha.git"
tag = "v1"
vendor_suffix = "alpha"
ops = ["attn"]
ccache_option = "--ccache"

[repos.ops-alpha.opbase_source]
repo = "opbase"
pin_file = "cmake/opbase.cmake"
pin_regex = 'OPBASE_TAG_ID\\s+([0-9a-f]{40})'
dest = "third_party/opbase"

[repos.ops-alpha.validate]
library = "vendors/{{ vendor_name }}_alpha/op_api/lib/libcust_opapi.so"
symbols = ["aclnnAttn"]
check = "ops-transformer.flash_attention"
why = "the fused one"
example = "steps/example.j2"
example_op = "attn"

[repos.ops-beta]
url = "https://example.invalid/ops-beta.git"
tag = "v1"
vendor_suffix = "beta"
ops = ["segsum", "cumsum"]

[repos.ops-beta.opbase_source]
repo = "opbase"
pin_file = "cmake/opbase.cmake"
pin_regex = 'OPBASE_TAG_ID\\s+([0-9a-f]{40})'
dest = "third_party/opbase"

[repos.ops-beta.validate]
library = "vendors/{{ vendor_name }}_beta/op_api/lib/libcust_opapi.so"
symbols = ["aclnnSegsum"]
check = "ops-beta.segsum"
example = "steps/example.j2"
example_op = "segsum"

[[steps]]
name = "opbase-build"
repo = "opbase"
command = "steps/opbase.j2"
optional = true

[[steps]]
name = "ops-alpha-build"
repo = "ops-alpha"
inputs = ["soc", "ops"]
command = "steps/ops-build.j2"
produces = ["build_out/alpha.run"]

[[steps]]
name = "ops-alpha-install"
phase = "install"
after = ["ops-alpha-build"]
command = "steps/ops-install.j2"
action = "vendor"

[[steps]]
name = "ops-beta-build"
repo = "ops-beta"
inputs = ["soc", "ops"]
command = "steps/ops-build.j2"
produces = ["build_out/beta.run"]

[[steps]]
name = "ops-beta-install"
phase = "install"
repo = "ops-beta"
after = ["ops-beta-build"]
command = "steps/ops-install.j2"
action = "vendor"
"""

TEMPLATES = {
    "opbase.j2": "bash build.sh -j{{ jobs }}\n",
    # one template for every repo: its own suffix and ops
    "ops-build.j2": "bash build.sh --pkg --soc={{ soc }} --ops={{ ops }} "
    "--vendor_name={{ vendor_name }} -j{{ jobs }} --repo-suffix={{ repo.vendor_suffix }}\n",
    "ops-install.j2": "bash {{ artifacts[repo.name ~ '-build'] }} --quiet --install-path={{ opp }}\n",
    "example.j2": "bash build.sh --run_example {{ example_op }} eager cust "
    "--vendor_name={{ vendor_name }}\n",
}


def write_recipe(folder: Path, text: str = RECIPE) -> Path:
    """The recipe and its templates in `folder`; the recipe file's path."""
    (folder / "steps").mkdir(parents=True, exist_ok=True)
    for name, body in TEMPLATES.items():
        (folder / "steps" / name).write_text(body)
    path = folder / "two.toml"
    path.write_text(text)
    return path
