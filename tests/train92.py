"""A stand-in CANN 9.2.0 train, made of data alone: the files README "Adding a train" says
a new train needs, written into a folder's `cannbuild-recipes/` (the recipe, the release's
published facts, and what the sandbox emulates of it), with no Python.  The stand-ins are
the 9.1 ones (their flavors) at new commits on a branch 9.2.0, as a release whose build
files did not change would be.  Used by tests/unit/test_adding_a_train.py and
tests/integration/test_train_as_data.py."""

from __future__ import annotations

from pathlib import Path
from typing import List, Sequence

from cannbuild.resources import data_dir

RELEASE = "9.2.0"
DRIVER = "26.2.0"
# the release's published facts: the HDK its (imagined) release note pairs it with
FACTS = f"""\
[release."{RELEASE}"]
drivers = ["{DRIVER}"]
"""
# what the sandbox emulates: the toolkit's records and driver, and one commit per stand-in
# repository on branch 9.2.0, laid out by the 9.1 flavors
SANDBOX = f"""\
[release."{RELEASE}"]
layout = "cann"
innerversion = "V100R001C28SPC001B100"
compatible_version = "[V100R001C25],[V100R001C26],[V100R001C27],[V100R001C11],[V100R001C12]"
driver = "{DRIVER}"
driver_inner = "V100R001C12B100"
driver_compatible = "[V100R001C11],[V100R001C12],[V100R001C28]"
opbase_in_toolkit = true
opbase_version = "9.0.0"
share_info = [
    "runtime", "metadef", "bisheng-compiler", "asc-devkit", "ge-executor", "ge-compiler", "hcomm",
    "asc-tools", "tbe-tik", "cann-ops-legacy", "cann-ops-math",
]
"""
STANDINS = ("opbase", "ops-transformer", "ops-math", "ops-nn", "ops-cv", "toolkit")


def _commit(repo: str, day: int, branched: bool) -> str:
    # the toolkit's host-side repositories are laid out by state, the others by flavor
    layout = 'state = "9.1"' if repo == "toolkit" else 'flavor = "v9.1.0"'
    branches = f'branches = ["{RELEASE}"]\n' if branched else ""
    return f"""
[[commit]]
repo = "{repo}"
{layout}
date = "2026-09-{day:02d}T12:00:00+08:00"
message = "release {RELEASE}"
{branches}"""


def recipe_92() -> str:
    """recipes/9.1.toml as train 9.2: the same refs (`{{ ops_release }}`) name branch 9.2.0,
    and its images' CANN is 9.2.0, as `cannbuild recipe draft --from 9.1` would start it."""
    text = (data_dir("recipes") / "9.1.toml").read_text(encoding="utf-8")
    for old, new in (
        ('name = "cann-9.1"', 'name = "cann-9.2"'),
        ('train = "9.1"', 'train = "9.2"'),
        ('image_cann = "9.1.0"', f'image_cann = "{RELEASE}"'),
    ):
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def write_train_92(cwd: Path, branched: Sequence[str] = STANDINS) -> List[Path]:
    """The data files, under `cwd/cannbuild-recipes/`; returns them.  `branched`: the
    stand-ins whose commit is on branch 9.2.0 (another one's lacks what the recipe names)."""
    user = cwd / "cannbuild-recipes"
    files = {
        user / "9.2.toml": recipe_92(),
        user / "facts" / "9.2.toml": FACTS,
        user / "sandbox" / "9.2.toml": SANDBOX
        + "".join(_commit(repo, 10 + i, repo in branched) for i, repo in enumerate(STANDINS)),
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)
