"""Adding a CANN train is adding data (issue 39, item 4): a folder holding only the files
README "Adding a train" lists (tests/train92.py writes them: no Python, nothing of the
package changed) gives every command a train 9.2 and a sandbox release 9.2.0, and a
mistake in those files is exit 2 naming the file and the key.  The end-to-end run on the
stand-ins is tests/integration/test_train_as_data.py."""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest
from test_recipe_check import EXTRA  # what a commit's CMake pins, for a build.sh only read
from train92 import DRIVER, RELEASE, STANDINS, write_train_92

from cannbuild.errors import UsageError
from cannbuild.host.published import releases
from cannbuild.recipes import select_recipe
from cannbuild.sandbox.releases import check_refs, standins
from cannbuild.sandbox.repos import _render_commit
from cannbuild.sandbox.siblings import render_sibling

from clirun import cannbuild

REPOS = ("opbase", "ops-transformer", "ops-math", "ops-nn", "ops-cv")
DRY_SETUP = ("setup", "--sandbox", "--cann", RELEASE, "--variant", "A3", "--soc", "A3", "--dry-run")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder with the stand-in train 9.2 and nothing else."""
    project = tmp_path / "project"
    project.mkdir()
    written = write_train_92(project)
    assert sorted(p for p in project.rglob("*") if p.is_file()) == sorted(
        project / p for p in written
    )
    return project


def stand_in_checkouts(folder: Path, out: Path) -> List[str]:
    """`--src REPO=DIR` for each repo at its stand-in commit on branch 9.2.0, read from
    the folder's data as the sandbox reads it."""
    args = []
    for repo in REPOS:
        [commit] = [c for c in standins(folder).history(repo) if RELEASE in c.branches]
        (out / repo).mkdir(parents=True)
        render = (
            render_sibling
            if repo.startswith("ops-") and repo != "ops-transformer"
            else _render_commit
        )
        render(out / repo, commit, EXTRA)
        args += ["--src", f"{repo}={out / repo}"]
    return args


def test_recipe_check_checks_a_train_added_as_data(folder: Path, tmp_path: Path):
    src = stand_in_checkouts(folder, tmp_path / "src")
    ok = cannbuild("recipe", "check", "9.2", *src, cwd=folder)
    assert ok.returncode == 0, ok.stderr
    recipe = folder / "cannbuild-recipes" / "9.2.toml"
    assert f"recipe {recipe}" in ok.stdout and "all 48 flags accepted" in ok.stdout, ok.stdout
    # the same line where the data is not: there is no train 9.2 to check
    bare = tmp_path / "bare"
    bare.mkdir()
    none = cannbuild("recipe", "check", "9.2", *src, cwd=bare)
    assert none.returncode == 2 and "9.2" in none.stderr, none.stderr
    assert "Traceback" not in none.stderr


def test_the_sandbox_emulates_a_release_added_as_data(folder: Path, tmp_path: Path):
    dry = cannbuild(*DRY_SETUP, cwd=folder)
    assert dry.returncode == 0, dry.stderr
    assert f"would create an A3 host with CANN {RELEASE}" in dry.stderr, dry.stderr  # a note
    # an unknown --cann names the releases there are, the one added as data among them
    other = cannbuild("plan", "--sandbox", "--cann", "9.9.0", cwd=folder)
    assert other.returncode == 2
    assert f"9.1.0, {RELEASE}" in other.stderr and "Adding a train" in other.stderr
    bare = tmp_path / "bare"
    bare.mkdir()
    without = cannbuild(*DRY_SETUP, cwd=bare)
    assert without.returncode == 2 and f"--cann '{RELEASE}' is not a CANN release" in without.stderr


def test_the_published_facts_of_a_release_added_as_data_join_the_shipped_ones(folder: Path):
    known = releases(folder)
    assert known[RELEASE].drivers == (DRIVER,)
    assert "9.2.0-beta.2" in known and "9.1.0" in known  # the shipped recipes/facts/9.2.toml too
    assert RELEASE not in releases(folder.parent)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "old", "new", "said"),
    [
        # an unknown key in the release's published facts
        (
            "facts/9.2.toml",
            "drivers = ",
            "driverz = ",
            "[release.9.2.0] has an unknown key 'driverz'",
        ),
        # a wrong type in what the sandbox emulates of it
        (
            "sandbox/9.2.toml",
            "opbase_in_toolkit = true",
            'opbase_in_toolkit = "yes"',
            "[release.9.2.0] opbase_in_toolkit = 'yes' is not true or false",
        ),
        # a stand-in commit laid out by a flavor the data does not declare
        (
            "sandbox/9.2.toml",
            'flavor = "v9.1.0"',
            'flavor = "v9.2.0"',
            "[[commit]] #1 (opbase 'release 9.2.0') flavor = 'v9.2.0' names no [flavor.opbase] table",
        ),
        ("sandbox/9.2.toml", 'date = "2026-09-10', 'date = "10 Sept 2026', "date = '10 Sept 2026"),
    ],
)
def test_a_mistake_in_a_train_added_as_data_is_exit_2_naming_the_file_and_key(
    folder: Path, name: str, old: str, new: str, said: str
):
    path = folder / "cannbuild-recipes" / name
    _edit(path, old, new)
    proc = cannbuild(*DRY_SETUP, cwd=folder)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    message = " ".join(proc.stderr.split())
    assert f"{name.split('/')[0]} file {path}:" in message and said in message, message
    assert "Traceback" not in proc.stderr and not (folder / ".cannbuild").exists()


def test_a_branch_the_recipe_names_that_the_stand_ins_lack_is_named_with_its_file_and_key(
    folder: Path,
):
    """The recipe's refs, rendered for the sandbox's 9.2.0, against the stand-ins' data: a
    stand-in commit without branch 9.2.0 is exit 2 before any fetch (build/session.py
    checks it once the sandbox is read, tests/integration/test_train_as_data.py end to end)."""
    recipe = select_recipe(None, "9.2", folder)
    values = {"cann": {"release": RELEASE}, "ops_release": RELEASE}
    check_refs(recipe, values, REPOS, folder)  # the data as written adds up
    write_train_92(folder, branched=[r for r in STANDINS if r != "ops-transformer"])
    # ops 9.2.1, a release the sandbox does not emulate: its branch is left to the fetch
    # (tests/integration/test_recipe_91_end_to_end.py: ops 9.1.1 stops there, as upstream)
    check_refs(recipe, {**values, "ops_release": "9.2.1"}, REPOS, folder)
    with pytest.raises(UsageError) as caught:
        check_refs(recipe, values, REPOS, folder)
    said = str(caught.value)
    recipe_file = folder / "cannbuild-recipes" / "9.2.toml"
    assert f"recipe {recipe_file} [repos.ops-transformer] branch = '{{{{ ops_release }}}}'" in said
    assert (
        f'no [[commit]] of ops-transformer in recipes/sandbox/*.toml or cannbuild-recipes/sandbox/*.toml has branches = ["{RELEASE}"]'
        in said
    )
