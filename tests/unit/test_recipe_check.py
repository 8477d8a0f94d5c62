"""`cannbuild recipe check`: every flag each shipped recipe renders is one the REAL build.sh
at that recipe's refs accepts.  The option specs of the real scripts were extracted with
cannbuild's own parser from git snapshots of cannmirror/ops-transformer and hicann/opbase
(and, for issue 27, hicann/ops-math, ops-nn and ops-cv) and are kept as data in tests/fixtures/buildsh/ (each with a `.source` note: repository,
ref, commit, how).  The sandbox's stand-in scripts parse too, and a recipe that renders a
flag the script does not take is refused, naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Tuple

import msgspec
import pytest
from msgspec.structs import replace

from cannbuild.errors import UsageError
from cannbuild.recipes import load_recipe, render_ref
from cannbuild.recipes.optspec import OptionSpec, option_spec
from cannbuild.resources import data_dir
from cannbuild.sandbox.releases import Commit, standins
from cannbuild.sandbox.repos import _render_commit
from cannbuild.sandbox.siblings import render_sibling
from cannbuild.train.check import (
    ScriptSpec,
    StepCommand,
    check_commands,
    check_context,
    check_recipe,
    refusal,
    rendered_commands,
)
from cannbuild.workspace import Workspace

from clirun import cannbuild

STANDINS = standins()
OPBASE_HISTORY = STANDINS.history("opbase")
OT_HISTORY = STANDINS.history("ops-transformer")
SIBLING_HISTORY = {repo: STANDINS.history(repo) for repo in ("ops-math", "ops-nn", "ops-cv")}
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
# Issue 27 groundwork: the sibling repositories' build.sh (hicann/ops-math, ops-nn, ops-cv) at
# the refs the 9.0 and 9.1 recipes name for ops-transformer (tags v9.0.0 and v9.0.1, branch
# 9.1.0, hicann/manifest@v9.1.0:cann.xml:5,7,8; the tag v9.1.0's build.sh is the branch's).
# They parse with the bash builtin getopts (recipes/getopts.py).
SIBLINGS = {
    # tag v8.5.0 (recipes/8.5.toml): their getopts scripts of January 2026
    "8.5": [f"{repo}@v8.5.0" for repo in ("ops-math", "ops-nn", "ops-cv")],
    "9.0": [
        f"{repo}@{ref}" for repo in ("ops-math", "ops-nn", "ops-cv") for ref in ("v9.0.0", "v9.0.1")
    ],
    "9.1": [f"{repo}@9.1.0" for repo in ("ops-math", "ops-nn", "ops-cv")],
}
# the operator each sibling would validate: an AscendC kernel for ascend910b and ascend910_93
# and an eager example at every ref above (math/segsum, activation/swi_glu,
# image/upsample_bilinear2d; add, gelu and resize build for ascend950 only)
SIBLING_OP = {"ops-math": "segsum", "ops-nn": "swi_glu", "ops-cv": "upsample_bilinear2d"}
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


Rendered = Callable[[str, str], Tuple[StepCommand, ...]]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Rendered:
    """rendered_commands(recipe(train), ws, ops=ops), rendered once for the module: the
    sibling tables below judge one train's commands against each sibling's script (each
    render of a whole train for every SoC was 0.2 s of CPU).  The commands are frozen."""
    ws = Workspace(root=tmp_path_factory.mktemp("rendered") / "ws")
    made: Dict[Tuple[str, str], Tuple[StepCommand, ...]] = {}

    def commands(train: str, ops: str = "") -> Tuple[StepCommand, ...]:
        if (train, ops) not in made:
            made[train, ops] = tuple(rendered_commands(recipe(train), ws, ops=ops))
        return made[train, ops]

    return commands


def test_every_real_spec_has_its_source_note_and_reads_back():
    names = sorted(p.name[: -len(".json")] for p in SPECS.glob("*.json"))
    expected = [n for pairs in REAL.values() for pair in pairs for n in pair]
    assert names == sorted(expected + [n for ns in SIBLINGS.values() for n in ns])
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
    assert ("[repos.ops-transformer.validate] example", "--run_example") in flags
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


def sibling_fixture(commit: Commit) -> str:
    """The real spec a sibling stand-in commit stands for (its build.sh is the same at
    v9.0.0 and v9.0.1, and at tag v9.1.0 and branch 9.1.0)."""
    ref = {"v8.5.0": "v8.5.0", "v9.0.0": "v9.0.0"}.get(commit.flavor.ref, "9.1.0")
    return f"{commit.repo}@{ref}"


@pytest.mark.parametrize(
    "commit",
    [c for history in SIBLING_HISTORY.values() for c in history],
    ids=lambda c: f"{c.repo}-{c.message}",
)
def test_every_sibling_stand_in_build_sh_takes_exactly_the_options_of_the_real_one(
    commit, tmp_path
):
    """The stand-in ops-math/ops-nn/ops-cv build.sh parse with getopts and read, option by
    option, as the real script of that ref does: the same arms, the same names listed in
    SUPPORTED_LONG_OPTS without an arm (math's `debug`, the `*_test` names) and the same arm
    the list leaves out (ops-nn v9.0.0's `mssanitizer`)."""
    render_sibling(tmp_path, commit, EXTRA)
    mine = option_spec((tmp_path / "build.sh").read_text())
    real = real_spec(sibling_fixture(commit)).spec
    assert mine.style == real.style == "getopts"
    assert {o.pattern for o in mine.options} == {o.pattern for o in real.options}
    assert {o.pattern for o in mine.unlisted} == {o.pattern for o in real.unlisted}
    assert {o.pattern for o in mine.declared_only} == {o.pattern for o in real.declared_only}


@pytest.mark.xdist_group("rendered")  # on the worker that renders each train once
@pytest.mark.parametrize(
    "train,name", [(t, n) for t, names in SIBLINGS.items() for n in names], ids=str
)
def test_the_shipped_recipes_sibling_steps_pass_each_siblings_real_build_sh(
    train, name, rendered: Rendered
):
    """What the 8.5, 9.0 and 9.1 recipes render for ops-math, ops-nn and ops-cv (their build step
    through steps/ops-build.j2, their example), for every SoC, is accepted by the real
    build.sh of that repo at that recipe's refs; and no compile cache adds `--ccache`, which
    none of them takes before v9.2.0-beta.1."""
    repo = name.split("@")[0]
    result = check_commands(recipe(train), rendered(train, ""), {repo: real_spec(name)})
    assert result.unknown == ()
    taken = {(r.step, r.word.split("=", 1)[0]) for r in result.rows if r.accepted}
    build = f"{repo}-build"
    for flag in ("--pkg", "--soc", "--ops", "--vendor_name", "-j8", "--cann_3rd_lib_path"):
        assert (build, flag) in taken, flag
    example = f"[repos.{repo}.validate] example"
    assert (example, "--run_example") in taken and (example, "--vendor_name") in taken
    assert not any("ccache" in r.word for r in result.rows)
    op = SIBLING_OP[repo]
    assert any(r.word == f"--ops={op}" for r in result.rows)
    assert {r.soc for r in result.rows} == set(recipe(train).socs)


def test_the_9_1_recipe_checks_clean_against_the_9_1_stand_ins_and_not_against_8_3(tmp_path):
    names = {"opbase": OPBASE_HISTORY[-1], "ops-transformer": OT_HISTORY[-1], "ot83": OT_HISTORY[0]}
    dirs: Dict[str, Path] = {}
    for name, commit in names.items():
        dirs[name] = tmp_path / name
        dirs[name].mkdir()
        _render_commit(dirs[name], commit, EXTRA)
    # the sibling repositories' stand-ins at branch 9.1.0 (the recipe lists them, --repos builds them)
    siblings = []
    for repo, history in SIBLING_HISTORY.items():
        (tmp_path / repo).mkdir()
        render_sibling(tmp_path / repo, history[-1], EXTRA)
        siblings += ["--src", f"{repo}={tmp_path / repo}"]
    ok = cannbuild(
        "recipe",
        "check",
        "9.1",
        "--src",
        f"opbase={dirs['opbase']}",
        "--src",
        str(dirs["ops-transformer"]),
        *siblings,
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    # 15 of opbase and ops-transformer, 11 of each sibling (6 words of its build step, 5 of its
    # example's `--run_example <op> eager cust --vendor_name=`)
    assert "all 48 flags accepted" in ok.stdout
    bad = cannbuild(
        "recipe",
        "check",
        "9.1",
        "--src",
        f"opbase={dirs['opbase']}",
        "--src",
        f"ops-transformer={dirs['ot83']}",
        *siblings,
        cwd=tmp_path,
    )
    assert bad.returncode == 2
    assert "1 of 48 flags UNKNOWN" in bad.stdout
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
        assert ("[repos.ops-transformer.validate] example", soc) in steps


# --- issue 27 groundwork: the sibling repositories -----------------------------------


def sibling_commands(train: str, repo: str, rendered: Rendered) -> List[StepCommand]:
    """ops-transformer's build step and the validation's example as recipe `train` renders
    them today, with the sibling's repo and operator put in."""
    op = SIBLING_OP[repo]
    out: List[StepCommand] = []
    for cmd in rendered(train, op):
        if cmd.repo != "ops-transformer":
            continue
        argv = tuple(
            op if w == "flash_attention_score" else w.replace("ops-transformer", repo)
            for w in cmd.argv
        )
        out.append(
            replace(cmd, repo=repo, step=cmd.step.replace("ops-transformer", repo), argv=argv)
        )
    return out


@pytest.mark.xdist_group("rendered")
@pytest.mark.parametrize(
    "train,name", [(t, n) for t, names in SIBLINGS.items() for n in names], ids=str
)
def test_sibling_groundwork_each_sibling_build_sh_takes_the_flags_of_ops_transformers_step(
    train, name, rendered: Rendered
):
    """--pkg --soc= --ops= --vendor_name= -j --cann_3rd_lib_path= and the example's
    `--run_example <op> eager cust --vendor_name=` pass; the compile cache's `--ccache <dir>`
    does not: no sibling lists `ccache` in SUPPORTED_LONG_OPTS at 9.0 or 9.1 (v9.2.0-beta.1
    adds `ccache=`, taken glued only: `--ccache=<dir>`)."""
    repo = name.split("@")[0]
    result = check_commands(
        recipe(train), sibling_commands(train, repo, rendered), {repo: real_spec(name)}
    )
    build = f"{repo}-build"
    taken = {(r.step, r.word.split("=", 1)[0]) for r in result.rows if r.accepted}
    for flag in ("--pkg", "--soc", "--ops", "--vendor_name", "-j8", "--cann_3rd_lib_path"):
        assert (build, flag) in taken, flag
    assert (f"[repos.{repo}.validate] example", "--run_example") in taken
    assert (f"[repos.{repo}.validate] example", "--vendor_name") in taken
    refused = {(r.step, r.word, r.note) for r in result.unknown}
    assert refused == {
        (build, "--ccache", "with a compile cache"),
        (build, "<ccache>", "with a compile cache"),
    }
    why = {r.word: r.why for r in result.unknown}
    assert "SUPPORTED_LONG_OPTS does not list it" in why["--ccache"]
    assert why["<ccache>"].startswith("getopts stops at the first word that is not an option")
    text = refusal(result).paragraph()
    assert f"step '{build}'" in text and "--ccache" in text and f"{name}.json" in text


@pytest.mark.xdist_group("rendered")
def test_sibling_groundwork_a_flag_a_sibling_does_not_take_is_named(rendered: Rendered):
    """The check can fail on a build flag too: ops-transformer's `--cann_3rd_lib_path <dir>`
    spelled as two words is refused by ops-math's getopts (its arm wants `=`)."""
    commands = sibling_commands("9.1", "ops-math", rendered)
    build = next(c for c in commands if c.step == "ops-math-build" and not c.note)
    at = next(i for i, w in enumerate(build.argv) if w.startswith("--cann_3rd_lib_path="))
    split = (*build.argv[:at], *build.argv[at].split("=", 1), *build.argv[at + 1 :])
    result = check_commands(
        recipe("9.1"), [replace(build, argv=split)], {"ops-math": real_spec("ops-math@9.1.0")}
    )
    path = build.argv[at].split("=", 1)[1]
    assert [r.word for r in result.unknown] == ["--cann_3rd_lib_path", path]
    assert "must be glued on: --cann_3rd_lib_path=VALUE" in result.unknown[0].why
    assert result.unknown[1].why.startswith("getopts stops")  # the path, a word on its own


def test_recipe_check_json_names_each_word_a_flag():
    from cannbuild.train.check import FlagRow, RecipeCheck

    row = FlagRow(step="build", soc="ascend910b", repo="ops-math", word="--soc=x", accepted=True)
    data = RecipeCheck(recipe=Path("r.toml"), scripts=(), rows=(row,), skipped=()).to_json()
    assert data["flags"] == [
        {"step": "build", "soc": "ascend910b", "repo": "ops-math", "flag": "--soc=x",
         "accepted": True, "option": "", "line": 0, "file": "build.sh", "why": "",
         "closest": None, "note": ""}
    ]  # fmt: skip
    assert data["recipe"] == "r.toml" and data["skipped"] == []


@pytest.mark.parametrize("image_cann", ["9.0.0-beta.1", "9.0.0-rc.1", "9.0.0"])
def test_a_pre_release_draft_is_checked_at_its_own_tags_not_its_final_releases(
    image_cann, tmp_path
):
    """`recipe draft --ref v9.0.0-beta.1` writes image_cann 9.0.0-beta.1 and tag
    v{{ ops_release }}: its check read the scripts at v9.0.0 (another commit; at 9.1.0-beta.3,
    where opbase has no v9.1.0 tag, it found none and said to fetch first)."""
    recipe = replace(load_recipe(data_dir("recipes") / "9.0.toml"), image_cann=image_cann)
    context = check_context(recipe, Workspace(root=tmp_path), "ascend910b", 1, "", "custom")
    for name in ("opbase", "ops-transformer", "ops-nn"):
        assert render_ref(recipe.repo(name), context.as_jinja())["tag"] == f"v{image_cann}"
