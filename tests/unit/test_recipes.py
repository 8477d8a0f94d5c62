from pathlib import Path

import pytest

from cannbuild.errors import UsageError
from cannbuild.recipes import available, check_requirements, load_recipe, select_recipe
from cannbuild.resources import data_dir

RECIPES = data_dir("recipes")
# every shipped train: a new recipes/<train>.toml is checked here without an edit
SHIPPED = sorted(p.stem for p in RECIPES.glob("*.toml"))


@pytest.mark.parametrize("train", SHIPPED)
def test_shipped_recipes_load_and_name_their_train(train):
    recipe = load_recipe(RECIPES / f"{train}.toml")
    assert recipe.train == train
    assert next(s.name for s in recipe.steps) == "opbase-build"
    assert recipe.steps[-1].phase == "install"
    validate = recipe.repo("ops-transformer").validate
    assert set(validate.symbols) >= {
        "aclnnFlashAttentionScoreV2",
        "aclnnFlashAttentionScoreV2GetWorkspaceSize",
    }
    # the default selection and what makes ops-transformer buildable: data, not code
    assert recipe.default_repos == ("ops-transformer",)
    transformer = recipe.repo("ops-transformer")
    assert transformer.vendor_suffix == "transformer" and transformer.ops == (
        "flash_attention_score",
    )
    assert validate.check == "ops-transformer.flash_attention" and validate.why
    assert not recipe.repo("opbase").buildable and recipe.notes == ()


def test_opbase_reaches_ops_transformer_the_way_each_train_needs():
    assert load_recipe(RECIPES / "8.5.toml").opbase == "toolkit"
    nine = load_recipe(RECIPES / "9.0.toml")
    assert nine.opbase == "source"
    assert nine.repo("ops-transformer").pins[0].dest == "third_party/opbase"
    assert "opbase-install" not in [s.name for s in nine.steps]


def test_selection_by_toolkit_train(tmp_path: Path):
    assert select_recipe(None, "9.0", tmp_path).name == "cann-9.0"
    with pytest.raises(UsageError) as err:
        select_recipe(None, "8.2", tmp_path)
    text = err.value.paragraph()
    assert "no recipe for CANN 8.2" in text and "8.3, 8.5, 9.0, 9.1" in text


def write_recipe(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "r.toml"
    path.write_text(text)
    return path


BASE = """
[recipe]
name = "x"
train = "9.9"
opbase = "source"
[repos.opbase]
url = "https://example.invalid/opbase.git"
tag = "v1"
[[steps]]
name = "opbase-build"
repo = "opbase"
command = "steps/opbase-build.j2"
[validate]
library = "lib.so"
symbols = ["a"]
"""


RULE = """
[[repos.opbase.third_party]]
name = "makeself"
place = [{place}]
source = "makeself-fetch.cmake:29"
"""


def test_a_user_recipe_file_loads_without_code(tmp_path: Path):
    recipe = load_recipe(write_recipe(tmp_path, BASE))
    assert recipe.name == "x" and recipe.repos[0].tag == "v1"


def test_user_recipe_dir_shadows_the_shipped_one(tmp_path: Path):
    (tmp_path / "cannbuild-recipes").mkdir()
    (tmp_path / "cannbuild-recipes" / "9.0.toml").write_text(
        BASE.replace('train = "9.9"', 'train = "9.0"')
    )
    assert available(tmp_path)["9.0"] == tmp_path / "cannbuild-recipes" / "9.0.toml"
    assert select_recipe(None, "9.0", tmp_path).name == "x"


@pytest.mark.parametrize(
    "edit,expected",
    [
        (
            lambda t: t.replace('command = "steps', 'comand = "steps'),
            "unknown key 'comand'. Did you mean 'command'?",
        ),
        (lambda t: t.replace('tag = "v1"', ""), "needs exactly one of tag, branch or commit"),
        (
            lambda t: t.replace("steps/opbase-build.j2", "steps/nope.j2"),
            "uses template 'steps/nope.j2'",
        ),
        (
            lambda t: t.replace('opbase = "source"', 'opbase = "magic"'),
            "opbase = 'magic' is not one of",
        ),
        (
            lambda t: t.replace('repo = "opbase"\ncommand', 'repo = "opbse"\ncommand'),
            "names repo 'opbse'",
        ),
        (lambda t: t + "\n[oops\n", "is not valid TOML"),
        (
            lambda t: t.replace('tag = "v1"', 'tag = "v1"' + RULE.format(place='"../../etc/x"')),
            "place '../../etc/x' is not a path inside the checkout",
        ),
        (
            lambda t: t.replace('tag = "v1"', 'tag = "v1"' + RULE.format(place='"/abs/x.tar.gz"')),
            "place '/abs/x.tar.gz' is not a path inside the checkout",
        ),
        (
            lambda t: t.replace(
                'tag = "v1"', 'tag = "v1"' + RULE.format(place='"third_party/x"') + 'md5 = "XYZ"\n'
            ),
            "md5 = 'XYZ' is not 32 lower-case hex digits",
        ),
        # what msgspec checks, said in the file's words: the table as the file heads it
        (lambda t: t.replace('tag = "v1"', "tag = 1"), "[repos.opbase] tag = 1 is not a string"),
        (
            lambda t: t.replace('repo = "opbase"\n', 'repo = "opbase"\nenv = { CC = 3 }\n'),
            "[[steps]] #1 env.CC = 3 is not a string",
        ),
        (
            lambda t: t.replace('repo = "opbase"\n', 'repo = "opbase"\nphase = "later"\n'),
            "[[steps]] #1 phase = 'later' is not one of build, install",
        ),
        (
            lambda t: t.replace(
                'tag = "v1"', 'tag = "v1"' + RULE.format(place='"a/"') + "needd = 1"
            ),
            "[[repos.opbase.third_party]] #1 has an unknown key 'needd'. Did you mean 'needed'?",
        ),
        (lambda t: t.replace('name = "x"\n', ""), "[recipe] needs a 'name' key"),
    ],
)
def test_recipe_mistakes_name_the_file_and_key(tmp_path: Path, edit, expected):
    path = write_recipe(tmp_path, edit(BASE))
    with pytest.raises(UsageError) as err:
        load_recipe(path)
    assert expected in err.value.paragraph()
    assert str(path) in err.value.paragraph()


def test_requirements_use_the_builds_own_version_rule():
    recipe = load_recipe(RECIPES / "9.0.toml")
    share = {pkg: "9.0.0" for pkg, _ in recipe.requires}
    assert check_requirements(recipe, share) == []
    share["opbase"] = "8.5.0-beta.1"  # cut at '-', as check_build_dependencies.py does
    assert check_requirements(recipe, share) == []
    share["runtime"] = "8.3.RC1"
    share["hcomm"] = "8.3.0"
    del share["metadef"]
    problems = {p[0]: p[3] for p in check_requirements(recipe, share)}
    assert problems == {"runtime": "not numeric", "hcomm": "too old", "metadef": "missing"}


def test_force_names_a_step_of_the_recipe():
    from cannbuild.build.plan import check_force

    recipe = load_recipe(RECIPES / "8.5.toml")
    check_force(recipe, ["opbase-build", "ops-transformer-install"])
    with pytest.raises(UsageError, match="--force opbase-bild: the recipe has no such step") as err:
        check_force(recipe, ["opbase-build", "opbase-bild"])
    assert "ops-transformer-build" in err.value.paragraph()


def test_9_0_builds_no_opbase_package_unless_asked():
    from cannbuild.build.plan import check_selection, selected

    nine = load_recipe(RECIPES / "9.0.toml")
    opbase_build = next(s for s in nine.steps if s.name == "opbase-build")
    assert opbase_build.optional
    assert not selected(opbase_build, (), ())
    assert selected(opbase_build, ("opbase-build",), ())
    assert selected(opbase_build, (), ("opbase-build",))  # --force asks for it too
    assert not any(s.optional for s in load_recipe(RECIPES / "8.5.toml").steps)
    check_selection(nine, ["opbase-build"])
    with pytest.raises(UsageError, match="always runs in recipe cann-9.0") as err:
        check_selection(nine, ["ops-transformer-build"])
    assert "Optional steps of recipe cann-9.0: opbase-build." in err.value.paragraph()
    with pytest.raises(UsageError, match="has no such step"):
        check_selection(nine, ["opbase-bild"])


def test_a_step_cannot_depend_on_an_optional_one(tmp_path: Path):
    text = BASE.replace(
        'command = "steps/opbase-build.j2"', 'command = "steps/opbase-build.j2"\noptional = true', 1
    )
    text += (
        '\n[[steps]]\nname = "later"\nafter = ["opbase-build"]\ncommand = "steps/opbase-build.j2"\n'
    )
    with pytest.raises(UsageError, match="runs after 'opbase-build', which is optional"):
        load_recipe(write_recipe(tmp_path, text))


@pytest.mark.parametrize("train", SHIPPED)
def test_the_toolkit_files_a_recipe_lists_are_checked_and_a_missing_one_named(tmp_path, train):
    from cannbuild.host.contents import contents_check

    recipe = load_recipe(RECIPES / f"{train}.toml")
    steps = [s.name for s in recipe.steps]
    # only what the checkout's cmake cannot tell is listed by hand, each with its reason
    # (and from 8.5, the siblings' gen_esb, which ge's add_es_library runs by its path: ops-math
    # at v8.5.0, ops-nn and ops-cv from v9.0.0)
    assert {f.component for f in recipe.toolkit_files} == {
        "hcc cross toolchain",
        "opbuild",
        "ascendc kernel cmake",
    } | ({"gen_esb"} if tuple(map(int, train.split("."))) >= (8, 5) else set())
    assert all(f.reason for f in recipe.toolkit_files)
    for entry in recipe.toolkit_files:  # one alternative of each (the last)
        path = tmp_path / entry.paths[-1].replace("{{ arch }}", "aarch64")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    row = contents_check(recipe.toolkit_files, steps, tmp_path, "aarch64", recipe.name)
    assert row.status == "pass" and f"all {len(recipe.toolkit_files)} files" in row.detail
    (tmp_path / "tools/opbuild/op_build").unlink()
    row = contents_check(recipe.toolkit_files, steps, tmp_path, "aarch64", recipe.name)
    assert row.status == "fail" and row.blocking
    assert "opbuild (tools/opbuild/op_build; CANN package" in row.detail
    assert "cmake/config.cmake" in row.detail
    # only the steps that will run count
    row = contents_check(recipe.toolkit_files, ["opbase-build"], tmp_path, "aarch64", recipe.name)
    assert row.status == "pass"


def test_a_toolkit_file_without_a_reason_is_refused_naming_the_entry(tmp_path):
    text = (RECIPES / "9.0.toml").read_text()
    broken = text.replace(
        'reason = "cmake/config.cmake sets OP_BUILD_TOOL',
        'source2 = "cmake/config.cmake sets OP_BUILD_TOOL',
    ).replace("source2 = ", "# ", 1)
    assert broken != text
    with pytest.raises(UsageError) as err:
        load_recipe(write_recipe(tmp_path, broken))
    text = err.value.paragraph()
    assert "[[toolkit.files]] #2 has no 'reason'" in text and "find_library" in text


@pytest.mark.parametrize("train", ["8.5", "9.0"])
def test_from_8_5_on_every_archive_a_build_downloads_has_a_place(train):
    """What makes `setup --offline --bundle` possible: nothing is left to download."""
    recipe = load_recipe(RECIPES / f"{train}.toml")
    built = {s.repo for s in recipe.steps}
    for repo in (r for r in recipe.repos if r.name in built):
        needed = [r for r in repo.third_party if r.needed]
        assert {r.name for r in needed} >= {"makeself", "json", "protobuf", "abseil-cpp"}
        assert all(r.place and r.source for r in needed), repo.name


def test_8_3_says_which_archives_its_refs_download_on_every_build():
    recipe = load_recipe(RECIPES / "8.3.toml")
    unplaceable = {
        (repo.name, r.name)
        for repo in recipe.repos
        for r in repo.third_party
        if r.needed and not r.place
    }
    assert unplaceable == {
        ("opbase", "protobuf"),
        ("opbase", "eigen"),
        ("ops-transformer", "makeself"),
    }


def test_the_recipe_wide_third_party_list_still_adds_an_archive(tmp_path: Path):
    text = (
        BASE
        + """
[[third_party]]
name = "extra"
url = "https://example.invalid/extra-1.tar.gz"
dest = "pkg/extra-1.tar.gz"
repos = ["opbase"]
"""
    )
    rule = load_recipe(write_recipe(tmp_path, text)).repo("opbase").third_party[0]
    assert (rule.name, rule.place, rule.url) == (
        "extra",
        ("third_party/pkg/extra-1.tar.gz",),
        "https://example.invalid/extra-1.tar.gz",
    )
