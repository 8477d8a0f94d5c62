"""`cannbuild recipe check`: every flag each shipped recipe renders is one the REAL build.sh
at that recipe's refs accepts.  The option specs of the real scripts were extracted with
cannbuild's own parser from git snapshots of cannmirror/ops-transformer and hicann/opbase
and are kept as data in tests/fixtures/buildsh/ (each with a `.source` note: repository,
ref, commit, how).  The sandbox's stand-in scripts parse too, and a recipe that renders a
flag the script does not take is refused, naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

import msgspec
import pytest
from msgspec.structs import replace

from cannbuild.errors import UsageError
from cannbuild.recipes import load_recipe
from cannbuild.recipes.optspec import OptionSpec, option_spec
from cannbuild.resources import data_dir
from cannbuild.sandbox.releases import OPBASE_HISTORY, OT_HISTORY
from cannbuild.sandbox.repos import _render_commit
from cannbuild.train.check import ScriptSpec, check_recipe, refusal, rendered_commands
from cannbuild.workspace import Workspace

from clirun import cannbuild

SPECS = Path(__file__).resolve().parents[1] / "fixtures" / "buildsh"
# recipe train -> the refs of its real build.sh files (recipes/<train>.toml): 8.3 master as of
# 2025-11-16; 9.0's tag v{{ ops_release }} for 9.0.0 and 9.0.1; 9.1's branch 9.1.0.
REAL = {
    "8.3": [("opbase@868d7512", "ops-transformer@c29bc106")],
    "8.5": [("opbase@v8.5.0", "ops-transformer@v8.5.0")],
    "9.0": [
        ("opbase@v9.0.0", "ops-transformer@v9.0.0"),
        ("opbase@v9.0.1", "ops-transformer@v9.0.1"),
    ],
    "9.1": [("opbase@9.1.0", "ops-transformer@9.1.0")],
}
EXTRA = {
    "opbase_tag_id": "0" * 40,
    "optensor_tag_id": "1" * 40,
    "optensor_api": "2",
    "cann_cmake_tag": "master-026",
    "cann_cmake_sha256": "2" * 64,
}


def real_spec(name: str) -> ScriptSpec:
    path = SPECS / f"{name}.json"
    repo, ref = name.split("@")
    spec = msgspec.json.decode(path.read_bytes(), type=OptionSpec)
    return ScriptSpec(repo=repo, path=str(path), ref=ref, spec=spec)


def recipe(train: str):
    return load_recipe(data_dir("recipes") / f"{train}.toml")


def test_every_real_spec_has_its_source_note_and_reads_back():
    names = sorted(p.name[: -len(".json")] for p in SPECS.glob("*.json"))
    assert names == sorted(n for pairs in REAL.values() for pair in pairs for n in pair)
    for name in names:
        note = (SPECS / f"{name}.json.source").read_text()
        for key in ("repository:", "ref:", "commit:", "path: build.sh", "extracted:"):
            assert key in note, (name, key)
        assert real_spec(name).spec.options


@pytest.mark.parametrize(
    "train,pair", [(t, p) for t, pairs in REAL.items() for p in pairs], ids=lambda x: str(x)
)
def test_the_real_build_sh_accepts_every_flag_a_shipped_recipe_renders(train, pair, tmp_path):
    shipped = recipe(train)
    scripts = {name.split("@")[0]: real_spec(name) for name in pair}
    result = check_recipe(shipped, Workspace(root=tmp_path / "ws"), scripts)
    assert result.unknown == ()
    flags = {(r.step, r.word.split("=", 1)[0]) for r in result.rows}
    # what a run hands each build.sh, including the example and a compile cache's --ccache
    assert ("ops-transformer-build", "--soc") in flags
    assert ("ops-transformer-build", "--ccache") in flags
    assert ("[validate] example", "--run_example") in flags
    assert ("opbase-build", "-j8") in flags
    assert {r.soc for r in result.rows} == set(shipped.socs)


def test_a_flag_the_real_script_does_not_take_fails_naming_step_flag_script_and_closest(
    tmp_path,
):
    """8.3's ops-transformer (master as of 2025-11-16) has no --cann_3rd_lib_path: the 8.3
    recipe says third_party_flag = false; turned on, the check fails."""
    shipped = recipe("8.3")
    wrong = replace(
        shipped, vars=tuple(sorted({**dict(shipped.vars), "third_party_flag": True}.items()))
    )
    scripts = {n.split("@")[0]: real_spec(n) for n in REAL["8.3"][0]}
    result = check_recipe(wrong, Workspace(root=tmp_path / "ws"), scripts)
    unknown = {(r.step, r.word.split("=", 1)[0]) for r in result.unknown}
    assert unknown == {("ops-transformer-build", "--cann_3rd_lib_path")}
    error = refusal(result)
    assert isinstance(error, UsageError) and error.exit_code == 2
    text = error.paragraph()
    assert "step 'ops-transformer-build'" in text and "--cann_3rd_lib_path=" in text
    assert "ops-transformer@c29bc106.json" in text and "no `case` arm matches it" in text
    # and the same recipe against the 9.1 scripts: opbase's getopt refuses nothing it renders
    scripts = {n.split("@")[0]: real_spec(n) for n in REAL["9.1"][0]}
    assert check_recipe(wrong, Workspace(root=tmp_path / "ws"), scripts).unknown == ()


@pytest.mark.parametrize(
    "commit", [*OPBASE_HISTORY, *OT_HISTORY], ids=lambda c: f"{c.repo}-{c.message}"
)
def test_every_sandbox_stand_in_build_sh_parses_in_the_style_of_the_real_one(commit, tmp_path):
    _render_commit(tmp_path, commit, EXTRA)
    spec = option_spec((tmp_path / "build.sh").read_text())
    assert spec.style == ("getopt" if commit.repo == "opbase" else "case")
    names = set(spec.names())
    assert {"--pkg", "-j"} <= names if commit.repo == "ops-transformer" else "-j" in names


def test_the_9_1_recipe_checks_clean_against_the_9_1_stand_ins_and_not_against_8_3(tmp_path):
    names = {"opbase": OPBASE_HISTORY[-1], "ops-transformer": OT_HISTORY[-1], "ot83": OT_HISTORY[0]}
    dirs: Dict[str, Path] = {}
    for name, commit in names.items():
        dirs[name] = tmp_path / name
        dirs[name].mkdir()
        _render_commit(dirs[name], commit, EXTRA)
    ok = cannbuild(
        "recipe",
        "check",
        "9.1",
        "--src",
        f"opbase={dirs['opbase']}",
        "--src",
        str(dirs["ops-transformer"]),
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    assert "all 15 flags accepted" in ok.stdout
    bad = cannbuild(
        "recipe",
        "check",
        "9.1",
        "--src",
        f"opbase={dirs['opbase']}",
        "--src",
        f"ops-transformer={dirs['ot83']}",
        cwd=tmp_path,
    )
    assert bad.returncode == 2
    assert "1 of 15 flags UNKNOWN" in bad.stdout
    assert "step 'ops-transformer-build'" in bad.stderr and "--cann_3rd_lib_path=" in bad.stderr
    assert f"{dirs['ot83']}/build.sh" in bad.stderr


def test_recipe_check_without_checkouts_says_to_fetch_first(tmp_path):
    result = cannbuild("recipe", "check", "9.0", "-w", str(tmp_path / "ws"), cwd=tmp_path)
    assert result.returncode == 2
    assert "src/opbase/build.sh does not exist" in result.stderr
    assert "cannbuild fetch" in result.stderr and "--src opbase=DIR" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_rendered_commands_cover_every_soc_and_the_example(tmp_path):
    shipped = recipe("9.1")
    commands = rendered_commands(shipped, Workspace(root=tmp_path))
    steps = {(c.step, c.soc) for c in commands}
    for soc in shipped.socs:
        assert ("ops-transformer-build", soc) in steps
        assert ("opbase-build", soc) in steps  # an optional step is checked too
        assert ("[validate] example", soc) in steps
