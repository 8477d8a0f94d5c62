"""Repositories as data (issue 27): a recipe's buildable repos (vendor suffix, ops, their
own validation), the old top-level [validate] still read, --repos selecting and ordering
them, --ops taking `repo:op`, one template serving every repo, and nothing in the code
naming ops-transformer's vendor folder."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from msgspec.structs import replace

from cannbuild import ui
from cannbuild.build.compile_cache import ccache_words
from cannbuild.build.plan import NOT_SELECTED, PlannedStep
from cannbuild.build.requirements import derived_rows
from cannbuild.build.session import locking_session
from cannbuild.build.stamps import write_stamp
from cannbuild.build.steps import make_plan
from cannbuild.container.context import ContainerSpec, render_context
from cannbuild.errors import UsageError, ValidationFailed
from cannbuild.options import resolve_options
from cannbuild.recipes import StepSpec, load_recipe
from cannbuild.recipes.selection import ops_by_repo, select_repos
from cannbuild.report_md import built_from_text
from cannbuild.resources import data_dir
from cannbuild.sources.lock import drift, read_lock, write_lock
from cannbuild.sources.pinning import unlocked_reason, wanted_for
from cannbuild.sources.pins import pin_sharing
from cannbuild.transaction import built_from
from cannbuild.validate import (
    FA_CHECK,
    ValidationCheck,
    ValidationInputs,
    ValidationReport,
    ValidationSummary,
    run_validation,
)
from cannbuild.validate.cases import FA_OP
from cannbuild.validate.verdict import check_verdict

from clirun import cannbuild
from lockdata import sample_lock
from multirecipe import RECIPE, write_recipe

PACKAGE = Path(__file__).resolve().parents[2] / "cannbuild"


def hard_coded_vendor_folders(package: Path) -> list:
    """`file:line` of every `_transformer` in the package's code outside sandbox/."""
    return [
        f"{path.relative_to(package)}:{number}"
        for path in package.rglob("*.py")
        if "sandbox" not in path.relative_to(package).parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "_transformer" in line
    ]


def test_no_code_outside_the_sandbox_names_ops_transformers_vendor_folder(tmp_path):
    """`_transformer` lives in the recipes (vendor_suffix, the library path) and in the
    sandbox's ops-transformer stand-in, nowhere else in the package."""
    assert hard_coded_vendor_folders(PACKAGE) == []
    # the scan finds one where there is one (and leaves the sandbox's alone)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "x.py").write_text('vendor = opp / f"{name}_transformer"\n')
    (tmp_path / "sandbox").mkdir()
    (tmp_path / "sandbox" / "y.py").write_text('"custom_transformer"\n')
    assert hard_coded_vendor_folders(tmp_path) == ["build/x.py:1"]


@pytest.fixture
def two(tmp_path):
    return load_recipe(write_recipe(tmp_path / "recipes"))


def test_buildable_repos_their_suffix_ops_and_validation_are_recipe_data(two):
    assert [r.name for r in two.buildable] == ["ops-alpha", "ops-beta"]
    assert two.default_repos == ("ops-alpha",) and two.order == ("ops-alpha",)
    beta = two.repo("ops-beta")
    assert beta.vendor_folder("acme") == "acme_beta" and beta.ops == ("segsum", "cumsum")
    assert beta.validate.check == "ops-beta.segsum" and beta.validate.example_op == "segsum"
    assert not two.repo("opbase").buildable
    # an install step without `repo` belongs to the repo of the build it runs after
    install = next(s for s in two.steps if s.name == "ops-alpha-install")
    assert install.repo is None and two.step_owner(install) == "ops-alpha"


def test_an_old_top_level_validate_is_read_as_its_installers_repo_with_a_note(tmp_path):
    old = RECIPE.replace('default_repos = ["ops-alpha"]\n', "").replace(
        "[repos.ops-alpha.validate]", "[validate]"
    )
    old = re.sub(r"\[repos\.ops-beta\.validate\].*?(?=\n\[\[steps)", "", old, flags=re.S)
    old = old.replace('vendor_suffix = "alpha"\n', "").replace('ops = ["attn"]\n', "")
    recipe = load_recipe(write_recipe(tmp_path, old))
    alpha = recipe.repo("ops-alpha")
    # its suffix from the library path `vendors/{{ vendor_name }}_alpha/...`
    assert alpha.vendor_suffix == "alpha" and alpha.validate.why == "the fused one"
    # and builds what --ops built by default before recipes named each repo's ops
    assert alpha.ops == ("flash_attention_score",)
    assert recipe.order == ("ops-alpha", "ops-beta")  # no default_repos: every buildable repo
    assert len(recipe.notes) == 1
    assert (
        "top-level [validate] is the old form, read as [repos.ops-alpha.validate]"
        in (recipe.notes[0])
    )


@pytest.mark.parametrize(
    "change, words",
    [
        (
            ('default_repos = ["ops-alpha"]', 'default_repos = ["opbase"]'),
            [
                "default_repos names 'opbase'",
                "Buildable repos (with a vendor_suffix): ops-alpha, ops-beta",
            ],
        ),
        (('vendor_suffix = "beta"', 'vendor_suffix = "be/ta"'), ["vendor_suffix = 'be/ta'"]),
        (('ccache_option = "--ccache"', 'ccache_option = "ccache"'), ["ccache_option = 'ccache'"]),
        (
            (
                "[repos.ops-alpha.validate]",
                '[validate]\nlibrary = "x"\nsymbols = []\n[repos.ops-alpha.validate]',
            ),
            ["the old, recipe-wide form", "Move it to [repos."],
        ),
        (
            ('check = "ops-beta.segsum"', 'chek = "ops-beta.segsum"'),
            ["[repos.ops-beta.validate]", "Did you mean 'check'"],
        ),
    ],
)
def test_a_mistake_in_the_repo_data_names_the_file_and_key(tmp_path, change, words):
    path = write_recipe(tmp_path, RECIPE.replace(*change))
    with pytest.raises(UsageError) as err:
        load_recipe(path)
    text = err.value.paragraph()
    assert str(path) in text
    for word in words:
        assert word in text


def test_ops_without_a_vendor_suffix_is_refused(tmp_path):
    text = RECIPE.replace(
        'tag = "v1"\n\n[repos.ops-alpha]', 'tag = "v1"\nops = ["x"]\n\n[repos.ops-alpha]'
    )
    with pytest.raises(UsageError, match="lists ops but has no vendor_suffix"):
        load_recipe(write_recipe(tmp_path, text))


# --- selecting ------------------------------------------------------------------------


def test_repos_narrow_the_recipe_in_the_order_given(two):
    both = select_repos(two, ["ops-beta", "ops-alpha"])
    assert both.order == ("ops-beta", "ops-alpha") and both.unselected == ()
    assert [r.name for r in both.selected] == ["ops-beta", "ops-alpha"]
    beta = select_repos(two, ["ops-beta"])
    assert [r.name for r in beta.repos] == ["opbase", "ops-beta"]  # the source stays
    assert [s.name for s in beta.steps] == ["opbase-build", "ops-beta-build", "ops-beta-install"]
    assert beta.unselected == ("ops-alpha",)
    default = select_repos(two, [])
    assert default.order == ("ops-alpha",) and "ops-beta-build" not in [
        s.name for s in default.steps
    ]


@pytest.mark.parametrize(
    "names, words",
    [
        (["ops-gamma"], ["--repos names 'ops-gamma', which is not a repository of the recipe"]),
        (["opbase"], ["'opbase', which is a source the buildable repos take, not one to select"]),
        (["ops-beta", "ops-beta"], ["names 'ops-beta' twice"]),
    ],
)
def test_a_repo_that_cannot_be_selected_is_a_usage_error_naming_the_buildable_ones(
    two, names, words
):
    with pytest.raises(UsageError) as err:
        select_repos(two, names)
    text = err.value.paragraph()
    for word in words:
        assert word in text
    assert "builds ops-alpha, ops-beta" in text and "--repos ops-alpha,ops-beta" in text


def test_each_repo_gets_its_own_ops_and_a_bare_op_goes_to_the_repo_that_ships_it(two):
    both = select_repos(two, ["ops-alpha", "ops-beta"])
    assert ops_by_repo(both, "") == {"ops-alpha": ("attn",), "ops-beta": ("segsum", "cumsum")}
    # a bare op the recipe lists for one repo; the other keeps its default
    assert ops_by_repo(both, "cumsum") == {"ops-alpha": ("attn",), "ops-beta": ("cumsum",)}
    given = ops_by_repo(both, "ops-alpha:rope,ops-beta:softmax,ops-alpha:attn")
    assert given == {"ops-alpha": ("rope", "attn"), "ops-beta": ("softmax",)}
    # a checkout that has the op's folder claims it
    ships = lambda repo, op: repo == "ops-alpha" and op == "rope"  # noqa: E731
    assert ops_by_repo(both, "rope", ships)["ops-alpha"] == ("rope",)
    # an op no checkout has among its regular ones goes to the one that has it under
    # experimental/ (its derived row then says what that takes), not to an error
    experimental = lambda repo, op: repo == "ops-beta" and op == "silu_mul"  # noqa: E731
    assert ops_by_repo(both, "silu_mul", ships, experimental)["ops-beta"] == ("silu_mul",)
    assert ops_by_repo(both, "rope", ships, lambda r, o: True)["ops-alpha"] == ("rope",)
    # one repo selected: a bare op is its, whatever it is
    alone = select_repos(two, ["ops-beta"])
    assert ops_by_repo(alone, "anything") == {"ops-beta": ("anything",)}


@pytest.mark.parametrize(
    "ops, ships, words",
    [
        (
            "attn",
            lambda r, o: True,
            [
                "the selected repos ops-alpha, ops-beta each ship an operator 'attn'",
                "--ops ops-alpha:attn",
            ],
        ),
        (
            "rope",
            lambda r, o: False,
            ["none of the selected repos (ops-alpha, ops-beta) lists 'rope'", "--ops <repo>:rope"],
        ),
        (
            "ops-gamma:x",
            lambda r, o: False,
            ["names repo 'ops-gamma', which is not a buildable repo"],
        ),
    ],
)
def test_an_op_whose_repo_cannot_be_told_asks_for_repo_op(two, ops, ships, words):
    both = select_repos(two, ["ops-alpha", "ops-beta"])
    with pytest.raises(UsageError) as err:
        ops_by_repo(both, ops, ships)
    text = err.value.paragraph()
    for word in words:
        assert word in text


def test_a_misspelt_op_of_several_repos_names_the_close_one_and_its_repo(two):
    """`--repos ops-math,ops-nn --ops segsm` (ops-math@v9.0.0 has math/segsum): the error
    said only to name the repo, e.g. `ops-math:segsm`, itself a misspelling the build would
    fail on; one repo selected, its derived row said "Did you mean segsum?"."""
    both = select_repos(two, ["ops-alpha", "ops-beta"])
    names = {"ops-alpha": ["attn", "rope"], "ops-beta": ["segsum", "cumsum"]}.get
    with pytest.raises(UsageError) as err:
        ops_by_repo(both, "segsm", names=lambda repo: names(repo, []))
    assert "Did you mean --ops ops-beta:segsum?" in err.value.paragraph()
    with pytest.raises(UsageError) as err:
        ops_by_repo(both, "qqqq", names=lambda repo: names(repo, []))
    assert "Did you mean" not in err.value.paragraph()


def test_an_op_the_recipe_lists_for_a_repo_not_selected_says_to_add_that_repo(two):
    """`--repos ops-math --ops swi_glu` (recipe 9.0 lists swi_glu for ops-nn, and only
    ops-nn@v9.0.0 has activation/swi_glu): the op went to ops-math, whose doctor row said
    only that it has no such folder, "e.g. flash_attention_score"."""
    alone = select_repos(two, ["ops-beta"])
    with pytest.raises(UsageError) as err:
        ops_by_repo(alone, "attn")
    text = err.value.paragraph()
    assert "'attn' is an operator of ops-alpha" in text
    assert "--repos does not select (selected: ops-beta)" in text
    assert "--repos ops-beta,ops-alpha" in text
    # the selected repo's checkout has it too: its own, as before
    ships = lambda repo, op: repo == "ops-beta" and op == "attn"  # noqa: E731
    assert ops_by_repo(alone, "attn", ships) == {"ops-beta": ("attn",)}


def test_a_misspelt_or_unbuildable_repo_in_repo_op_is_not_to_be_added_to_repos(two):
    """`--ops ops-mth:segsum` (or `opbase:x`) said "Add ops-mth to --repos", which then fails
    as a repo the recipe does not have."""
    alone = select_repos(two, ["ops-beta"])
    with pytest.raises(UsageError) as err:
        ops_by_repo(alone, "ops-alpah:attn")
    text = err.value.paragraph()
    assert "Did you mean ops-alpha:attn?" in text and "Add ops-alpah" not in text
    assert "buildable repos (ops-beta, ops-alpha)" in text


def test_a_misspelt_repo_in_repos_names_the_close_one(two):
    """`--repos ops-mth` listed the buildable repos but did not say which was meant."""
    with pytest.raises(UsageError) as err:
        select_repos(two, ["ops-alpah"])
    assert err.value.paragraph().count("Did you mean ops-alpha?") == 1
    with pytest.raises(UsageError) as err:
        select_repos(two, ["zzz"])
    assert "Did you mean" not in err.value.paragraph()


def test_doctor_routes_a_bare_op_to_the_repo_whose_checkout_has_it(two, tmp_path):
    """`doctor`/`plan --ops abs` with ops-transformer, ops-math, ops-nn and ops-cv selected
    (ops-math@v9.0.0 has math/abs/op_host, no recipe lists abs): the derived rows take the
    op where the checkout has it, as the build does, instead of refusing it as unclaimed."""
    ws = tmp_path / "ws"
    (ws / "src/ops-beta/math/abs/op_host").mkdir(parents=True)
    options = resolve_options({"workspace": str(ws), "ops": "abs"}, {}, {})
    rows = derived_rows(select_repos(two, ["ops-alpha", "ops-beta"]), options, tmp_path / "cann")
    assert [r.id for r in rows] == ["recipe.derived"]  # not locked yet: a skip, no refusal


def test_an_op_of_a_repo_not_selected_says_to_add_it(two):
    with pytest.raises(UsageError) as err:
        ops_by_repo(select_repos(two, ["ops-alpha"]), "ops-beta:segsum")
    text = err.value.paragraph()
    assert "which --repos does not select (selected: ops-alpha)" in text
    assert "Add ops-beta to --repos" in text


def test_bench_without_the_repo_of_flash_attention_names_the_repo_that_builds_it(tmp_path):
    """`bench`/`profile --run`/`diagnose --repos ops-math` on 9.0: the hint names the
    unselected repo whose recipe ops list the operator, not every repo the recipe has."""
    options = resolve_options(
        {"soc": "A2", "workspace": str(tmp_path / "ws"), "repos": "ops-math"}, {}, {}
    )
    s = locking_session(options, {}, tmp_path, "9.0.0")
    with pytest.raises(UsageError) as err:
        s.repo_for_op(FA_OP, "cannbuild bench")
    text = err.value.paragraph()
    assert (
        "cannbuild bench needs flash_attention_score, which none of the repos this run builds "
        "(ops-math) lists among its ops."
    ) in text
    assert (
        "Add ops-transformer, which builds it, to --repos (e.g. --repos ops-math,ops-transformer)."
        in text
    )
    assert "ops-nn" not in text and "ops-cv" not in text
    # an op no repo of the recipe lists: the repos it has, as before
    with pytest.raises(UsageError) as err:
        s.repo_for_op("nope", "cannbuild bench")
    assert (
        "Add the repo that builds it to --repos (recipe cann-9.0 also has: ops-transformer, ops-nn, ops-cv)."
        in err.value.paragraph()
    )


def test_bench_records_the_build_of_the_repo_that_ships_flash_attention(tmp_path):
    """With ops-math first in --repos, bench recorded ops-math's build as the baseline of
    the FlashAttention library it times, which ops-transformer's package holds."""
    from cannbuild.bench.run import installed_baseline

    options = resolve_options(
        {"soc": "A2", "workspace": str(tmp_path / "ws"), "repos": "ops-math,ops-transformer"},
        {},
        {},
    )
    s = locking_session(options, {}, tmp_path, "9.0.0")
    for step in ("ops-math-install", "ops-transformer-install"):
        write_stamp(
            s.ws, step, run_id="r", input_hash="h", inputs={}, artifacts=[], requires=[],
            duration_s=1.0, log=tmp_path / "log",
        )  # fmt: skip
    library = s.vendor_dir_of("ops-transformer") / "op_api" / "lib" / "libcust_opapi.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"")
    found, record = installed_baseline(s)
    assert found == library
    assert record["step"] == "ops-transformer-install" and "also" not in record


def test_the_validated_line_names_the_package_of_each_validated_repo(tmp_path):
    """`setup --repos ops-transformer,ops-math` validates both packages: the closing
    "Validated the package..." line (report.md, the terminal) names each one's install
    and commits, not ops-transformer's alone; bench asks for its repo's package only."""
    options = resolve_options(
        {"soc": "A2", "workspace": str(tmp_path / "ws"), "repos": "ops-transformer,ops-math"},
        {},
        {},
    )
    s = locking_session(options, {}, tmp_path, "9.0.0")
    for step, run, commit in (
        ("ops-transformer-build", "run-1", "a" * 40),
        ("ops-transformer-install", "run-1", None),
        ("ops-math-build", "run-2", "b" * 40),
        ("ops-math-install", "run-2", None),
    ):
        inputs = {"source": {"commit": commit}} if commit else {}
        write_stamp(
            s.ws,
            step,
            run_id=run,
            input_hash="h",
            inputs=inputs,
            artifacts=[],
            requires=[],
            duration_s=1.0,
            log=tmp_path / "log",
        )
    record = built_from(s)
    assert record is not None and record["step"] == "ops-transformer-install"
    assert [p["step"] for p in record["also"]] == ["ops-math-install"]
    (line,) = built_from_text(record)
    first, second = line.split("; by ")
    assert first.startswith("Validated the packages installed by ops-transformer-install at ")
    assert first.endswith("(run run-1), built from ops-transformer `aaaaaaaaaaaa`")
    assert second.startswith("ops-math-install at ")
    assert second.endswith("(run run-2), built from ops-math `bbbbbbbbbbbb`.")
    # installed by one run, as a setup of several repos does: one sentence (the README's
    # four-repo setup is held to 40 rows)
    same = {**record, "run_id": "r", "also": [{**record["also"][0], "run_id": "r"}]}
    (once,) = built_from_text(same)
    assert once.startswith(
        "Validated the packages installed by ops-transformer-install, ops-math-install in run r (by "
    )
    assert once.endswith("built from ops-transformer `aaaaaaaaaaaa`, ops-math `bbbbbbbbbbbb`.")
    # one repo's package (what bench times): that one alone, worded as before
    (alone,) = built_from_text(built_from(s, "ops-math") or {})
    assert alone.startswith("Validated the package installed by ops-math-install at ")
    assert "ops-transformer" not in alone


def test_repos_and_ops_as_flags_variables_and_config():
    assert resolve_options({"repos": "ops-math, ops-transformer"}, {}, {}).repos == (
        "ops-math",
        "ops-transformer",
    )
    assert resolve_options({}, {"CANNBUILD_REPOS": "a,b"}, {}).repos == ("a", "b")
    assert resolve_options({}, {}, {"repos": ["x", "y"]}).repos == ("x", "y")
    assert resolve_options({"ops": "ops-math:segsum,swi_glu"}, {}, {}).ops == (
        "ops-math:segsum,swi_glu"
    )
    with pytest.raises(UsageError, match="'ops math' is not a repository name"):
        resolve_options({"repos": "ops math"}, {}, {})
    with pytest.raises(UsageError, match="each `op` or `repo:op`"):
        resolve_options({"ops": "ops-math:"}, {}, {})
    with pytest.raises(UsageError, match="environment variable CANNBUILD_OPS"):
        resolve_options({}, {"CANNBUILD_OPS": "a b"}, {})


# --- a session, its plan and its lock ---------------------------------------------------


def session(tmp_path: Path, recipe: Path, **cli):
    options = resolve_options(
        {"soc": "A2", "workspace": str(tmp_path / "ws"), "recipe": str(recipe), **cli}, {}, {}
    )
    return locking_session(options, {}, tmp_path, "9.0.0")


def test_one_template_renders_each_repos_own_suffix_ops_and_vendor_folder(tmp_path):
    path = write_recipe(tmp_path / "recipes")
    s = session(tmp_path, path, repos="ops-beta,ops-alpha", ops="ops-alpha:rope")
    assert s.recipe.order == ("ops-beta", "ops-alpha")
    assert list(s.vendor_dirs) == ["ops-beta", "ops-alpha"]
    assert s.vendor_dir_of("ops-beta") == tmp_path / "ws" / "opp" / "vendors" / "custom_beta"
    steps = {p.name: p for p in make_plan(s, None, {}, ("build", "install"))}
    assert steps["opbase-build"].status == NOT_SELECTED  # optional, as before
    assert "--ops=segsum,cumsum" in steps["ops-beta-build"].command
    assert "--repo-suffix=beta" in steps["ops-beta-build"].command
    assert "--ops=rope" in steps["ops-alpha-build"].command
    assert steps["ops-alpha-build"].inputs["ops"] == "rope"  # a changed op list rebuilds it
    assert steps["ops-alpha-install"].owner == "ops-alpha"
    assert steps["ops-alpha-install"].command.startswith("bash '<output of ops-alpha-build>'")


def test_a_plan_names_no_old_package_for_an_install_whose_build_runs_again(tmp_path):
    """A build step that must run again (here: its inputs changed, as in a workspace
    copied to another path) will make a new package; the plan showed its install running
    the package its old stamp names, at the old workspace's path."""
    path = write_recipe(tmp_path / "recipes")
    s = session(tmp_path, path, repos="ops-alpha", ops="ops-alpha:rope")
    old = "/elsewhere/ws/src/ops-alpha/build_out/cann-ops-alpha.run"
    write_stamp(
        s.ws, "ops-alpha-build", run_id="r", input_hash="not these inputs", inputs={},
        artifacts=[{"path": old, "sha256": "ab" * 32, "size": 1}], requires=[],
        duration_s=1.0, log=tmp_path / "log",
    )  # fmt: skip
    steps = {p.name: p for p in make_plan(s, None, {}, ("build", "install"))}
    assert steps["ops-alpha-build"].status == "needs run"
    assert steps["ops-alpha-install"].command.startswith("bash '<output of ops-alpha-build>'")
    assert old not in steps["ops-alpha-install"].command


def test_steps_of_a_repo_not_selected_are_not_planned_and_its_lock_entry_is_drift(tmp_path):
    path = write_recipe(tmp_path / "recipes")
    s = session(tmp_path, path)  # the default: ops-alpha alone
    names = [p.name for p in make_plan(s, None, {}, ("build", "install"))]
    assert names == ["opbase-build", "ops-alpha-build", "ops-alpha-install"]
    wanted = wanted_for(s.source_request())
    assert [name for name, _, _ in wanted.repos] == ["opbase", "ops-alpha"]
    lock = replace(
        sample_lock("9.0.0"),
        recipe="two",
        repos=tuple(
            replace(r, name=n, url=f"https://example.invalid/{n}.git", ref="tag v1")
            for r, n in zip(sample_lock("9.0.0").repos * 2, ["opbase", "ops-alpha", "ops-beta"])
        ),
        soc="ascend910b",
    )
    problems = drift(lock, wanted)
    assert any(
        p.startswith("repo ops-beta: in the lock, and this run does not build it") for p in problems
    )
    assert not any(p.startswith("repo ops-alpha") for p in problems)


def test_plan_says_whether_the_repos_share_their_opbase_pin(tmp_path):
    recipe = select_repos(load_recipe(write_recipe(tmp_path)), ["ops-alpha", "ops-beta"])
    base = sample_lock("9.0.0")

    def lock(alpha: str, beta: str):
        pins = tuple(
            replace(base.repos[0], name=f"{repo}:third_party/opbase", commit=commit)
            for repo, commit in (("ops-alpha", alpha), ("ops-beta", beta))
        )
        return replace(base, repos=base.repos + pins)

    assert pin_sharing(recipe, None) == [
        "opbase: pinned by ops-alpha, ops-beta; shared or per repo is known once the pins are "
        "read (cannbuild fetch)"
    ]
    (shared,) = pin_sharing(recipe, lock("a" * 40, "a" * 40))
    assert shared.startswith("opbase: shared: ops-alpha, ops-beta pin the same commit aaaaaaaaaaaa")
    (each,) = pin_sharing(recipe, lock("a" * 40, "e" * 40))
    assert each.startswith(
        "opbase: per repo: the pins differ (ops-alpha aaaaaaaaaaaa in "
        "third_party/opbase; ops-beta eeeeeeeeeeee in third_party/opbase)"
    )
    # one repo alone pinning it says nothing
    assert pin_sharing(select_repos(recipe, ["ops-beta"]), None) == []


def test_the_ccache_option_is_the_repos_own_two_words_glued_or_none(tmp_path):
    recipe = load_recipe(write_recipe(tmp_path))

    def step(repo: str) -> PlannedStep:
        return PlannedStep(
            spec=StepSpec(name=f"{repo}-build", command="x", repo=repo),
            command="bash build.sh --pkg",
            argv=("bash", "build.sh", "--pkg"),
            cwd=tmp_path,
            env={},
            env_delta={},
            inputs={},
        )

    assert ccache_words(step("ops-alpha"), recipe, "/c") == ("--ccache", "/c")
    assert ccache_words(step("ops-beta"), recipe, "/c") == ()  # its build.sh refuses --ccache
    glued = replace(
        recipe,
        repos=tuple(
            replace(r, ccache_option="--ccache=") if r.name == "ops-beta" else r
            for r in recipe.repos
        ),
    )
    assert ccache_words(step("ops-beta"), glued, "/c") == ("--ccache=/c",)
    given = replace(step("ops-alpha"), argv=("bash", "build.sh", "--ccache", "/mine"))
    assert ccache_words(given, recipe, "/c") == ()  # the step gives one already


def test_the_shipped_recipes_render_the_same_ops_transformer_commands_as_before(tmp_path):
    """The default set is unchanged: the 9.0 build step still renders --ops=flash_attention_score
    with the ops-transformer vendor name, and the example the flash_attention_score one."""
    options = resolve_options({"soc": "A2", "workspace": str(tmp_path / "ws")}, {}, {})
    s = locking_session(options, {}, tmp_path, "9.0.0")
    assert s.recipe.order == ("ops-transformer",)
    steps = {p.name: p for p in make_plan(s, None, {}, ("build", "install"))}
    build = steps["ops-transformer-build"].command
    assert "--ops=flash_attention_score --vendor_name=custom" in build
    assert s.vendor_dir_of("ops-transformer").name == "custom_transformer"
    assert (data_dir("templates") / "steps" / "run-example.j2").read_text().count("example_op") == 1


def test_an_unknown_repo_on_the_command_line_is_exit_2_naming_the_buildable_ones(tmp_path):
    proc = cannbuild(
        "lock",
        "--cann",
        "9.0.0",
        "--soc",
        "A2",
        "--repos",
        "ops-transformer,ops-nope",
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert "--repos names 'ops-nope', which is not a repository of the recipe" in proc.stderr
    assert "builds ops-transformer" in proc.stderr
    assert not (tmp_path / "cannbuild.lock").exists()


@pytest.mark.parametrize(
    "env, config, said",
    [
        (
            {"CANNBUILD_REPOS": "ops-transformer,ops-nope"},
            "",
            "environment variable CANNBUILD_REPOS names 'ops-nope', which is not a repository",
        ),
        (
            {},
            "cannbuild:\n  repos: [ops-transformer, ops-nope]\n",
            "invoke config cannbuild.repos names 'ops-nope', which is not a repository",
        ),
        (
            {"CANNBUILD_OPS": "ops-nope:x"},
            "",
            "environment variable CANNBUILD_OPS ops-nope:x: names repo 'ops-nope'",
        ),
        (
            {},
            "cannbuild:\n  ops: ops-nope:x\n",
            "invoke config cannbuild.ops ops-nope:x: names repo 'ops-nope'",
        ),
    ],
)
def test_repos_or_ops_from_a_variable_or_config_are_named_as_given(tmp_path, env, config, said):
    """A --repos or --ops value is judged against the recipe after the options are
    resolved; the error names where it came from, not a flag the user never typed."""
    if config:
        (tmp_path / "invoke.yaml").write_text(config)
    proc = cannbuild("lock", "--cann", "9.0.0", "--soc", "A2", cwd=tmp_path, **env)
    assert proc.returncode == 2, proc
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    text = " ".join(proc.stderr.split())
    assert said in text and "--repos" not in text.split(".")[0]
    assert not (tmp_path / "cannbuild.lock").exists()


def test_a_repo_this_train_lacks_is_exit_2_naming_the_trains_that_build_it(tmp_path):
    """ops-math has no recipe at 8.3 (it builds opbase and ops-transformer only): the error
    names the recipes that build it (issue 42); 8.5's does since ops-math's v8.5.0 tag."""
    proc = cannbuild(
        "lock",
        "--cann",
        "8.3.RC2",
        "--soc",
        "A2",
        "--repos",
        "ops-transformer,ops-math",
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc
    text = " ".join(proc.stderr.split())
    assert "--repos names 'ops-math', which is not a repository of the recipe" in text
    assert "Recipe cann-8.3 (8.3.toml, the train of this CANN) does not build ops-math" in text
    assert "the recipes of 8.5, 9.0, 9.1 do" in text


@pytest.mark.parametrize(
    "repos", ["ops-math", "ops-nn", "ops-cv", "ops-transformer,ops-math,ops-nn,ops-cv"]
)
def test_the_8_5_recipe_builds_each_sibling_at_its_v8_5_0_tag_after_opbase_install(tmp_path, repos):
    """`--repos ops-math` (ops-nn, ops-cv, or all four) on an 8.5 toolkit: each sibling at tag
    v8.5.0, built after opbase-install (it finds opbase installed in the toolkit, no opbase
    pin), installed as its own vendor and validated by its own check; the default set stays
    ops-transformer alone."""
    from cannbuild.recipes import select_recipe

    recipe = select_recipe("8.5", None, tmp_path)
    assert recipe.default_repos == ("ops-transformer",)
    chosen = select_repos(recipe, tuple(repos.split(",")))
    assert [r.name for r in chosen.buildable] == repos.split(",")
    for name in repos.split(","):
        if name == "ops-transformer":
            continue
        repo = next(r for r in chosen.repos if r.name == name)
        assert repo.tag == "v8.5.0" and repo.opbase_source is None
        assert repo.validate is not None and repo.validate.example_lookup == "home-opp"
        build = next(s for s in chosen.steps if s.name == f"{name}-build")
        assert build.after == ("opbase-install",) and build.command == "steps/ops-build.j2"
        assert any(s.name == f"{name}-install" for s in chosen.steps)
    assert [s.name for s in chosen.steps][:2] == ["opbase-build", "opbase-install"]


def test_on_the_sandbox_it_says_the_sandbox_keeps_its_cann_and_gives_the_line(tmp_path):
    from cannbuild.build.session import _built_elsewhere
    from cannbuild.options import Options
    from cannbuild.recipes import select_recipe

    recipe = select_recipe("8.3", None, tmp_path)
    options = Options(
        sandbox=True,
        sandbox_cann="8.3.RC2",
        workspace=tmp_path / "ws",
        repos=("ops-transformer", "ops-math"),
    )
    said = _built_elsewhere("ops-math", recipe, options, tmp_path)
    assert "A workspace's sandbox keeps the CANN it was made with (this one's is 8.3.RC2)" in said
    assert said.endswith(
        f"cannbuild setup --sandbox --cann 9.1.0 --repos ops-transformer,ops-math -w {tmp_path}/ws-9.1"
    )
    assert _built_elsewhere("ops-nope", recipe, options, tmp_path) == ""


def test_a_lock_records_a_selection_other_than_the_default_and_a_container_builds_it(tmp_path):
    path = tmp_path / "cannbuild.lock"
    chosen = replace(sample_lock("9.0.0"), build_repos=("ops-math", "ops-transformer"))
    write_lock(path, chosen)
    text = path.read_text()
    assert 'build_repos = [\n    "ops-math",\n    "ops-transformer",\n]' in text or (
        'build_repos = ["ops-math", "ops-transformer"]' in text
    )
    assert "version = 3" in text and read_lock(path).build_repos == chosen.build_repos
    write_lock(path, sample_lock("9.0.0"))  # the default selection: the bytes as before
    assert "build_repos" not in path.read_text() and "version = 2" in path.read_text()
    out = tmp_path / "ctx"
    write_lock(path, chosen)
    render_context(ContainerSpec(variant="A3", cann="9.0.0"), chosen, path, out)
    assert "--repos ops-math,ops-transformer" in (out / "Dockerfile").read_text()


def test_a_lock_made_with_a_vendor_name_has_the_container_build_packages_of_that_vendor(tmp_path):
    """`lock --vendor-name acme`: the image's `setup --locked` built custom_* packages
    (cann-ops-math-custom_linux-<arch>.run), not the acme ones the lock was made for."""
    path = write_recipe(tmp_path / "recipes")
    assert session(tmp_path, path, vendor_name="acme").source_request().vendor_name == "acme"
    assert session(tmp_path, path).source_request().vendor_name == ""  # the default
    lock_path = tmp_path / "cannbuild.lock"
    write_lock(lock_path, sample_lock("9.0.0"))  # the default vendor: the bytes as before
    assert "vendor_name" not in lock_path.read_text() and "version = 2" in lock_path.read_text()
    write_lock(lock_path, replace(sample_lock("9.0.0"), vendor_name="acme"))
    lock = read_lock(lock_path)
    assert lock.vendor_name == "acme" and "version = 3" in lock_path.read_text()
    out = tmp_path / "ctx"
    render_context(ContainerSpec(variant="A3", cann="9.0.0"), lock, lock_path, out)
    setup = next(x for x in (out / "Dockerfile").read_text().splitlines() if "cannbuild setup" in x)
    assert "--vendor-name acme" in setup, setup
    render_context(ContainerSpec(variant="A3", cann="9.0.0"), sample_lock("9.0.0"), lock_path, out)
    assert "--vendor-name" not in (out / "Dockerfile").read_text()


def test_the_same_repos_in_another_order_is_drift_the_lock_names(tmp_path):
    path = write_recipe(tmp_path / "recipes")
    s = session(tmp_path, path, repos="ops-beta,ops-alpha")
    request = s.source_request()
    assert request.build_repos == ("ops-beta", "ops-alpha")
    assert session(tmp_path, path, repos="ops-alpha").source_request().build_repos == ()
    wanted = wanted_for(request)
    lock = replace(sample_lock("9.0.0"), build_repos=("ops-alpha", "ops-beta"))
    assert any(
        p.startswith(
            "repos: the lock was made for --repos ops-alpha,ops-beta, this run builds "
            "them in the order ops-beta,ops-alpha"
        )
        for p in drift(lock, wanted)
    )
    assert not any(
        p.startswith("repos:") for p in drift(replace(lock, build_repos=wanted.build_repos), wanted)
    )


def test_a_locked_run_with_another_vendor_name_than_the_lock_records_is_drift(tmp_path):
    """A lock made with --vendor-name acme, built by hand with `setup --locked` and no
    --vendor-name, made custom packages silently; a lock that records no vendor (made by
    an older cannbuild, or with the default) takes any."""
    path = write_recipe(tmp_path / "recipes")
    acme = replace(sample_lock("9.0.0"), vendor_name="acme")
    plain = wanted_for(session(tmp_path, path).source_request())
    said = [p for p in drift(acme, plain) if p.startswith("vendor name:")]
    assert said == [
        "vendor name: the lock was made for --vendor-name acme, this run names its packages custom"
    ]
    same = wanted_for(session(tmp_path, path, vendor_name="acme").source_request())
    assert not any(p.startswith("vendor name:") for p in drift(acme, same))
    assert not any(p.startswith("vendor name:") for p in drift(sample_lock("9.0.0"), same))


def test_a_host_tool_of_one_repo_is_needed_only_when_that_repo_is_built(tmp_path):
    """ops-nn's build.sh sources install_deps.sh, which wants pigz and dos2unix
    (nn@9.1.0 build.sh:33-38): a build of ops-transformer alone must not be blocked on them."""
    tools = (
        '[[host.tools]]\nname = "pigz"\nwhy = "ops-beta wants it"\nrepos = ["ops-beta"]\n\n'
        '[[host.tools]]\nname = "gawk"\nwhy = "every build"\n\n'
    )
    recipe = load_recipe(
        write_recipe(tmp_path, RECIPE.replace("[[steps]]", tools + "[[steps]]", 1))
    )
    assert [t.name for t in select_repos(recipe, ["ops-alpha"]).tools] == ["gawk"]
    assert [t.name for t in select_repos(recipe, ["ops-beta"]).tools] == ["pigz", "gawk"]
    wrong = RECIPE.replace(
        "[[steps]]", tools.replace('["ops-beta"]', '["ops-nn"]') + "[[steps]]", 1
    )
    with pytest.raises(UsageError, match=r"\[\[host.tools\]\] #1 names repo 'ops-nn'"):
        load_recipe(write_recipe(tmp_path / "wrong", wrong))


def test_plan_shows_each_repos_steps_under_its_name_and_the_pin_sharing(tmp_path):
    path = write_recipe(tmp_path / "recipes")
    s = session(tmp_path, path, repos="ops-beta,ops-alpha")
    out = io.StringIO()
    steps = make_plan(s, None, {}, ("build", "install"))
    ui.print_plan(s, steps, sharing=["opbase: per repo: the pins differ (...)"], stream=out)
    text = out.getvalue()
    assert "repos: ops-beta, ops-alpha (ASCEND_CUSTOM_OPP_PATH order, first wins)" in text
    assert "pinned opbase: per repo: the pins differ" in text
    heads = [line for line in text.splitlines() if line.startswith("== ")]
    assert heads == [
        "== opbase (a source)",
        "== ops-alpha (ops attn)",
        "== ops-beta (ops segsum,cumsum)",
    ]
    # one repo: the plan reads as it always did
    out = io.StringIO()
    alone = session(tmp_path, path)
    ui.print_plan(alone, make_plan(alone, None, {}, ("build",)), stream=out)
    assert "== " not in out.getvalue() and "repos:" not in out.getvalue()


# --- validation per repository ----------------------------------------------------------


def test_the_verdict_is_pass_only_when_every_repos_numeric_check_passed():
    def report(repo: str, check: str, status: str, cases=()) -> ValidationReport:
        checks = [ValidationCheck(id="library", status="PASS", message="ok")]
        checks.append(
            ValidationCheck(
                id="capi" if check == FA_CHECK else check, status=status, message=status
            )
        )
        return ValidationReport(
            target="sandbox", checks=checks, cases=list(cases), repo=repo, check=check
        )

    math = report("ops-math", "ops-math.segsum", "PASS")  # its cases are in its check's details
    assert math.status == "PASS"
    fa_without_cases = report("ops-transformer", FA_CHECK, "PASS")
    assert fa_without_cases.status == "SKIPPED"  # FlashAttention's PASS needs its cases
    both = ValidationSummary(reports=[fa_without_cases, math])
    assert both.status == "SKIPPED" and both.reason.startswith("ops-transformer: ")
    failed = ValidationSummary(reports=[math, report("ops-nn", "ops-nn.swi_glu", "FAIL")])
    assert failed.status == "FAIL" and failed.reason.startswith("ops-nn: ")
    data = failed.to_json()
    assert [r["repo"] for r in data["repos"]] == ["ops-math", "ops-nn"]
    assert data["repos"][1]["check"] == "ops-nn.swi_glu" and data["status"] == "FAIL"
    assert ValidationSummary(reports=[]).status == "SKIPPED"


def test_require_device_turns_skipped_into_exit_5_and_fail_is_exit_5_either_way():
    with pytest.raises(ValidationFailed) as raised:
        check_verdict({"status": "SKIPPED", "reason": "no NPU"}, True)
    assert raised.value.exit_code == 5
    assert "--require-device" in raised.value.paragraph() and "no NPU" in raised.value.paragraph()
    assert check_verdict({"status": "SKIPPED", "reason": "no NPU"}, False) is None
    assert check_verdict({"status": "PASS"}, True) is None
    for require_device in (True, False):
        with pytest.raises(ValidationFailed):
            check_verdict({"status": "FAIL"}, require_device)


def test_a_check_name_cannbuild_does_not_have_is_a_failed_check_naming_the_known_ones(tmp_path):
    report = run_validation(
        ValidationInputs(
            vendor_dir=tmp_path / "v",
            library=tmp_path / "v" / "libcust_opapi.so",
            symbols=(),
            env={},
            workdir=tmp_path / "validate",
            target="sandbox",
            no_device_reason="",
            repo="ops-math",
            check="ops-math.nope",
        )
    )
    capi = next(c for c in report.checks if c.id == "capi")
    assert capi.status == "FAIL" and report.status == "FAIL"
    assert "check 'ops-math.nope' for ops-math, which this cannbuild does not have" in capi.message
    assert FA_CHECK in capi.message


def test_a_soc_from_a_variable_that_the_recipe_lacks_is_named_as_given(tmp_path):
    """The recipe's SoC list is checked after the options are resolved: the error named
    `--soc` when the value came from CANNBUILD_SOC."""
    proc = cannbuild("lock", "--cann", "9.0.0", cwd=tmp_path, CANNBUILD_SOC="ascend910")
    assert proc.returncode == 2, proc
    text = " ".join(proc.stderr.split())
    assert "environment variable CANNBUILD_SOC ascend910 is not a SoC recipe cann-9.0" in text
    assert "--soc" not in text


def test_a_plan_over_a_lock_of_another_recipe_says_why_it_cannot_use_it(tmp_path):
    """A plan after an upgrade changed the recipe (or with another --repos) said every
    step needs a run because the "sources [were] not fetched or not locked yet (cannbuild
    fetch)", in a workspace whose sources were fetched and locked."""
    path = write_recipe(tmp_path / "recipes")
    request = session(tmp_path, path, lock_file=str(tmp_path / "cannbuild.lock")).source_request()
    assert request.lock_file == tmp_path / "cannbuild.lock"
    assert unlocked_reason(request) == "sources not fetched or not locked yet (cannbuild fetch)"
    made = replace(sample_lock("9.0.0"), recipe=request.recipe.name, recipe_digest="0" * 64)
    write_lock(request.lock_file, made)
    said = unlocked_reason(request)
    assert said.startswith("the lock does not hold this run's sources (recipe: "), said
    assert "has changed since the lock was made" in said and "locks them again" in said, said
