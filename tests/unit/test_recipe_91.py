"""The shipped 9.1 recipe: its refs follow the manifest, its requirements the 9.1 build
files, and every command line it renders is one the 9.1 stand-in build.sh parses (the
option lists of OT@9.1.0:build.sh:1117-1450 and OB@9.1.0:build.sh:92; docs/upstream-9.1.md
§3a-§3b).  The stand-in scripts run for real, without a toolkit: a command whose every
flag parses gets as far as the toolkit lookup (ops-transformer) or the help it is asked
for last (opbase); one flag it does not take ends at its help or "Undefined option"."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

from cannbuild.build.plan import example_values, render_command
from cannbuild.build.session import BuildContext, CannFacts
from cannbuild.recipes import load_recipe, render_ref, select_recipe
from cannbuild.resources import data_dir
from cannbuild.sandbox import releases as sandbox_data
from cannbuild.sandbox.repos import _render_commit

EXTRA = {
    "opbase_tag_id": "0" * 40,
    "optensor_tag_id": "1" * 40,
    "optensor_api": "2",
    "cann_cmake_tag": "master-026",
    "cann_cmake_sha256": "2" * 64,
}
NO_CANN = "Please set the toolkit package installation directory"


@pytest.fixture(scope="module")
def recipe():
    return load_recipe(data_dir("recipes") / "9.1.toml")


@pytest.fixture(scope="module")
def standins(tmp_path_factory) -> Dict[str, Path]:
    """opbase and ops-transformer at branch 9.1.0, as the sandbox writes them."""
    root = tmp_path_factory.mktemp("standins91")
    out = {}
    for name in ("ops-transformer", "opbase"):
        commit = sandbox_data.standins().history(name)[-1]
        assert commit.flavor.cann_cmake, commit.flavor.label  # the 9.1 layout
        (root / name).mkdir()
        _render_commit(root / name, commit, EXTRA)
        out[name] = root / name
    return out


def context(tmp_path: Path, ops_release: str = "9.1.0", recipe=None) -> Dict[str, object]:
    ws = tmp_path / "ws"
    names = ("opbase", "ops-transformer")
    for name in names:  # build.sh takes the realpath of --cann_3rd_lib_path
        (ws / "src" / name / "third_party").mkdir(parents=True, exist_ok=True)
    return BuildContext(
        cann=CannFacts(
            version="9.1.0",
            release="9.1.0",
            train="9.1",
            path=tmp_path / "cann",
            home=tmp_path / "cann-9.1.0",
            layout="cann",
        ),
        arch="x86_64",
        soc="ascend910_93",
        jobs=2,
        ops="flash_attention_score",
        vendor_name="custom",
        workspace=ws,
        src={n: ws / "src" / n for n in names},
        third_party={n: ws / "src" / n / "third_party" for n in names},
        opp=ws / "opp",
        stage=ws / "stage",
        overlay=ws / "overlay",
        opbase_install_path=ws / "stage/opbase",
        ops_release=ops_release,
        vars=recipe.vars if recipe else (),
    ).as_jinja()


def build_sh_args(recipe, tmp_path: Path) -> Dict[str, List[List[str]]]:
    """repo -> the build.sh argument lists the recipe renders for it (steps and the example)."""
    values = context(tmp_path, recipe=recipe)
    values["artifacts"] = {s.name: f"/out/{s.name}.run" for s in recipe.steps}
    found: Dict[str, List[List[str]]] = {}
    # opbase's and ops-transformer's steps (the sibling repositories' are checked against their
    # own stand-ins in test_sibling_standins.py)
    commands = [
        (s.repo, s.command, f"step {s.name!r}")
        for s in recipe.steps
        if recipe.step_owner(s) in ("opbase", "ops-transformer")
    ]
    validate = recipe.repo("ops-transformer").validate
    commands.append(("ops-transformer", validate.example, "[validate] example"))
    for repo, template, what in commands:
        given = example_values(values, repo, validate.example_op) if "example" in what else values
        argv = shlex.split(render_command(recipe, template, given, what))
        if argv[:2] == ["bash", "build.sh"]:
            found.setdefault(repo, []).append(argv[2:])
    return found


def run_build_sh(checkout: Path, args: List[str]) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(checkout)}
    return subprocess.run(
        ["bash", "build.sh", *args], cwd=checkout, env=env, capture_output=True, text=True
    )


def test_the_9_1_recipe_renders_build_sh_commands_for_both_repos(recipe, tmp_path):
    found = build_sh_args(recipe, tmp_path)
    assert len(found["opbase"]) == 1 and len(found["ops-transformer"]) == 2
    build, example = found["ops-transformer"]
    assert "--pkg" in build and "--soc=ascend910_93" in build and "-j2" in build
    assert example[:4] == ["--run_example", "flash_attention_score", "eager", "cust"]
    flags = {arg for lists in found.values() for args in lists for arg in args}
    assert not flags & {"--disable_asan", "-s"}  # gone at 9.1 (OT v9.0.0:1131, OB v9.0.0:95)


def test_ops_transformer_9_1_build_sh_parses_every_flag_the_recipe_renders(
    recipe, standins, tmp_path
):
    for args in build_sh_args(recipe, tmp_path)["ops-transformer"]:
        proc = run_build_sh(standins["ops-transformer"], args)
        # every flag parsed: the script went on to look for the toolkit
        assert proc.returncode == 1 and NO_CANN in proc.stdout, (args, proc.stdout)
    # ...and it can tell: a flag 9.1 dropped ends at the help instead
    proc = run_build_sh(standins["ops-transformer"], ["--pkg", "--disable_asan"])
    assert proc.returncode == 1 and NO_CANN not in proc.stdout


def test_opbase_9_1_build_sh_parses_every_flag_the_recipe_renders(recipe, standins, tmp_path):
    (args,) = build_sh_args(recipe, tmp_path)["opbase"]
    # the rendered flags, then -h: every one parsed, so the run reaches the help (exit 0)
    proc = run_build_sh(standins["opbase"], [*args, "-h"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_build_sh(standins["opbase"], [*args, "-s", "-h"])  # 9.0's -s: refused now
    assert proc.returncode == 1 and "Undefined option: -s" in proc.stdout


def test_the_9_1_refs_are_the_manifest_branch_of_the_ops_release(recipe, tmp_path):
    for repo in recipe.repos:
        if repo.name == "libboundscheck":  # openEuler's, at the tag runtime takes
            assert render_ref(repo, context(tmp_path))["tag"] == "v1.1.16"
            continue
        assert render_ref(repo, context(tmp_path)) == {
            "tag": None,
            "branch": "9.1.0",
            "until": None,
            "commit": None,
        }
        # --ops-release 9.1.1 asks for branch 9.1.1, which fetch names when it is missing;
        # the toolkit's own repos stay at the toolkit's release (opbase is both: its build
        # step, optional, follows the operators)
        toolkit_only = repo.toolkit and repo.name not in {s.repo for s in recipe.steps}
        branch = render_ref(repo, context(tmp_path, "9.1.1"))["branch"]
        assert branch == ("9.1.0" if toolkit_only else "9.1.1"), repo.name
    assert select_recipe(None, "9.1", tmp_path).path == recipe.path


def test_the_9_1_recipe_needs_what_the_9_1_build_files_name(recipe):
    # OT@9.1.0:version.cmake:13-20: asc-tools is no build dependency any more
    assert "asc-tools" not in dict(recipe.requires)
    assert "asc-tools" in dict(load_recipe(data_dir("recipes") / "9.0.toml").requires)
    assert dict(recipe.requires)["runtime"] == ">=8.5" and len(recipe.requires) == 8
    # OT@9.1.0:build.sh:2029 stamps its output without gawk; only ops-nn's build.sh checks for
    # tools a minimal OS lacks (install_deps.sh: pigz, dos2unix), and only when it is selected
    assert {(t.name, t.repos) for t in recipe.tools} == {
        ("pigz", ("ops-nn",)),
        ("dos2unix", ("ops-nn",)),
    }
    # OT@9.1.0:cmake/modules/Findruntime.cmake:18-19 looks for acl/acl_rt.h: derived from the
    # checkout now (build/derived.py), not listed by hand
    assert not any("acl" in f.component for f in recipe.toolkit_files)
    pins = {p.dest: p for r in recipe.repos for p in r.pins}
    assert set(pins) == {"third_party/opbase", "third_party/ops-tensor", "third_party/cann-cmake"}
    assert pins["third_party/cann-cmake"].pin == "tag"
    makeself = next(
        r for r in recipe.repo("ops-transformer").third_party if r.name == "makeself-fetch"
    )
    assert makeself.place[0] == "third_party/makeself/"  # unpacked: custom_build.cmake:1219
