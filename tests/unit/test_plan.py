"""Plan decisions on a temporary workspace, without running a build: why a step reruns,
what --force and --with-step do, what a failed step leaves unplanned."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import List

import pytest
from msgspec.structs import replace

from cannbuild.build.plan import (
    NEEDS_RUN,
    NOT_SELECTED,
    UP_TO_DATE,
    StepContext,
    recipe_templates,
    walk,
)
from cannbuild.build.stamps import artifact_record, read_stamp
from cannbuild.errors import UsageError
from cannbuild.recipes import load_recipe
from cannbuild.workspace import Workspace

from tinyrecipe import stamp_as_done

RECIPE = """
[recipe]
name = "tiny"
train = "0.1"
opbase = "source"

[repos.lib]
url = "https://example.invalid/lib.git"
tag = "v1"

[[steps]]
name = "build"
repo = "lib"
command = "steps/build.j2"
inputs = ["soc"]
produces = ["out/lib-{{ soc }}.run"]

[[steps]]
name = "install"
after = ["build"]
phase = "install"
command = "steps/install.j2"

[[steps]]
name = "docs"
repo = "lib"
command = "steps/build.j2"
optional = true

[validate]
library = "lib.so"
symbols = []
"""


@pytest.fixture
def recipe(tmp_path):
    folder = tmp_path / "recipes"
    (folder / "steps").mkdir(parents=True)
    (folder / "tiny.toml").write_text(RECIPE)
    # the recipe brings its own step templates, beside it
    (folder / "steps" / "build.j2").write_text("bash build.sh --soc={{ soc }} -j{{ jobs }}\n")
    (folder / "steps" / "install.j2").write_text('bash {{ artifacts["build"] }} --quiet\n')
    return load_recipe(folder / "tiny.toml")


def context(recipe, ws: Workspace, commit: str = "a" * 40, soc: str = "ascend910b", jobs: int = 8):
    src = ws.checkout("lib")
    return StepContext(
        values={
            "soc": soc,
            "jobs": jobs,
            "src": {"lib": str(src)},
            "third_party": {"lib": str(src / "third_party")},
            "artifacts": {},
        },
        sources={"lib": {"commit": commit, "nested": {}, "third_party": {}}},
        toolkit={"version": "8.5.0", "path": "/usr/local/Ascend/cann"},
        hashed_env={},
        base_env={"PATH": "/usr/bin"},
        overlay_env=None,
        extra_env={},
        recipe=recipe.name,
        templates=recipe_templates(recipe),
    )


def build_all(recipe, ws: Workspace, ctx) -> None:
    """What a successful run leaves: each selected step's stamp, and build's package."""

    def visit(step) -> bool:
        artifacts = []
        if step.name == "build":
            package = ws.checkout("lib") / "out" / f"lib-{ctx.values['soc']}.run"
            package.parent.mkdir(parents=True, exist_ok=True)
            package.write_text("package")
            artifacts.append(artifact_record(package))
        if step.status != NOT_SELECTED:
            stamp_as_done(ws, step, artifacts)
        return True

    walk(recipe, ctx, ws, ("build", "install"), visit=visit)


def statuses(steps) -> List[tuple]:
    return [(s.name, s.status, s.reason) for s in steps]


def test_a_fresh_workspace_needs_every_step_and_an_optional_one_only_when_asked(recipe, tmp_path):
    ws = Workspace(root=tmp_path / "ws")
    steps = walk(recipe, context(recipe, ws), ws, ("build", "install"))
    assert [(s.name, s.status) for s in steps] == [
        ("build", NEEDS_RUN),
        ("install", NEEDS_RUN),
        ("docs", NOT_SELECTED),
    ]
    assert steps[0].reason == "never built in this workspace"
    assert steps[1].reason == "runs after build, which needs to run"
    assert "--with-step docs" in steps[2].reason
    asked = walk(recipe, context(recipe, ws), ws, ("build", "install"), optional_steps=("docs",))
    assert asked[2].status == NEEDS_RUN
    assert not ws.stamps.exists()  # a plan writes nothing


def test_after_a_run_everything_is_up_to_date_and_more_jobs_change_nothing(recipe, tmp_path):
    ws = Workspace(root=tmp_path / "ws")
    build_all(recipe, ws, context(recipe, ws))
    steps = walk(recipe, context(recipe, ws, jobs=64), ws, ("build", "install"))
    assert [s.status for s in steps[:2]] == [UP_TO_DATE, UP_TO_DATE]
    assert "-j64" in steps[0].command  # rendered with the new -j, hashed without it


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"commit": "b" * 40}, "source commit changed: aaaaaaaaaaaa -> bbbbbbbbbbbb"),
        ({"soc": "ascend910_93"}, "soc changed: ascend910b -> ascend910_93"),
    ],
)
def test_a_changed_input_reruns_the_step_and_says_which(recipe, tmp_path, change, reason):
    ws = Workspace(root=tmp_path / "ws")
    build_all(recipe, ws, context(recipe, ws))
    steps = walk(recipe, context(recipe, ws, **change), ws, ("build", "install"))
    assert steps[0].status == NEEDS_RUN and steps[0].reason == reason
    assert steps[1].reason == "runs after build, which needs to run"


def test_a_file_edited_in_the_checkout_reruns_its_step_and_undoing_it_too(recipe, tmp_path):
    """A line added to src/ops-transformer's flash_attention_score_def.cpp left the build
    `up to date, skipped`: the package kept the old source and nothing said so.  An edit
    git tracks is an input; a file the build adds (untracked) is not."""
    ws = Workspace(root=tmp_path / "ws")
    src = ws.checkout("lib")
    src.mkdir(parents=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=src, check=True)
    (src / "op.cpp").write_text("int op;\n")
    subprocess.run([*git, "add", "op.cpp"], cwd=src, check=True)
    subprocess.run([*git, "commit", "-qm", "c"], cwd=src, check=True)
    build_all(recipe, ws, context(recipe, ws))
    (src / "made.o").write_text("x")
    assert walk(recipe, context(recipe, ws), ws, ("build",))[0].status == UP_TO_DATE
    (src / "op.cpp").write_text("int op; // mine\n")
    edited = walk(recipe, context(recipe, ws), ws, ("build", "install"))
    assert statuses(edited)[:2] == [
        ("build", NEEDS_RUN, "files edited in the checkout"),
        ("install", NEEDS_RUN, "runs after build, which needs to run"),
    ]
    build_all(recipe, ws, context(recipe, ws))
    assert walk(recipe, context(recipe, ws), ws, ("build",))[0].status == UP_TO_DATE
    (src / "op.cpp").write_text("int op;\n")
    undone = walk(recipe, context(recipe, ws), ws, ("build",))[0]
    assert (undone.status, undone.reason) == (NEEDS_RUN, "checkout edits undone")


def test_a_package_that_is_gone_or_changed_reruns_its_step(recipe, tmp_path):
    ws = Workspace(root=tmp_path / "ws")
    ctx = context(recipe, ws)
    build_all(recipe, ws, ctx)
    package = ws.checkout("lib") / "out" / "lib-ascend910b.run"
    package.write_text("someone else's")
    assert walk(recipe, ctx, ws, ("build",))[0].reason == (
        "its output lib-ascend910b.run was changed since it was built"
    )
    package.unlink()
    assert walk(recipe, ctx, ws, ("build",))[0].reason == "its output lib-ascend910b.run is gone"


def test_a_package_rewritten_at_the_same_size_reruns_its_step(recipe, tmp_path):
    ws = Workspace(root=tmp_path / "ws")
    ctx = context(recipe, ws)
    build_all(recipe, ws, ctx)
    package = ws.checkout("lib") / "out" / "lib-ascend910b.run"
    st = package.stat()
    package.write_bytes(b"x" * st.st_size)  # the same length: only the mtime tells
    os.utime(package, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert walk(recipe, ctx, ws, ("build",))[0].reason == (
        "its output lib-ascend910b.run was changed since it was built"
    )


def test_a_secret_in_the_hashed_environment_rebuilds_but_is_not_kept_in_the_stamp(recipe, tmp_path):
    ws = Workspace(root=tmp_path / "ws")
    first, second = (
        walk(
            recipe,
            replace(context(recipe, ws), hashed_env={"CFLAGS": f"-DTOKEN={t}"}),
            ws,
            ("build",),
        )
        for t in ("tokPW000", "tokPW111")
    )
    assert "tokPW000" not in json.dumps(first[0].inputs)
    assert first[0].input_hash != second[0].input_hash


def test_the_newest_package_a_pattern_matches_is_the_one_stamped(tmp_path):
    from cannbuild.build import runner

    old, new = tmp_path / "cann-a_1.run", tmp_path / "cann-b_1.run"
    old.write_text("old")
    new.write_text("new")
    os.utime(old, (1_000_000_000, 1_000_000_000))
    os.utime(new, (2_000_000_000, 2_000_000_000))
    (record,) = runner._collect(None, [str(tmp_path / "cann-*.run")])
    assert record["path"] == str(new)


def test_force_reruns_one_step_and_an_unknown_step_is_refused(recipe, tmp_path):
    ws = Workspace(root=tmp_path / "ws")
    ctx = context(recipe, ws)
    build_all(recipe, ws, ctx)
    steps = walk(recipe, ctx, ws, ("build", "install"), force=("install",))
    assert statuses(steps)[:2] == [
        ("build", UP_TO_DATE, steps[0].reason),
        ("install", NEEDS_RUN, "forced (--force)"),
    ]
    with pytest.raises(UsageError, match="--force nope"):
        walk(recipe, ctx, ws, ("build",), force=("nope",))
    with pytest.raises(UsageError, match="always runs"):
        walk(recipe, ctx, ws, ("build",), optional_steps=("build",))


def test_a_run_plans_each_step_after_the_one_before_ran_and_stops_at_a_failure(recipe, tmp_path):
    ws = Workspace(root=tmp_path / "ws")
    seen = []

    def fail_build(step) -> bool:
        seen.append((step.name, step.status))
        return False  # build failed: nothing after it is planned

    walk(recipe, context(recipe, ws), ws, ("build", "install"), visit=fail_build)
    assert seen == [("build", NEEDS_RUN)]
    # once build has its stamp, install is planned from it: it still needs a run, not
    # because build does
    ctx = context(recipe, ws)
    build_all(recipe, ws, replace(ctx))
    (ws.stamps / "install.json").unlink()
    steps = walk(recipe, ctx, ws, ("build", "install"))
    assert steps[1].reason == "never built in this workspace"
    assert read_stamp(ws, "build")["run_id"] == "r1"


def test_a_recipe_finds_its_templates_beside_it_before_cannbuilds(recipe):
    assert Path(recipe.path).parent in recipe_templates(recipe).search_path


def _planned(recipe, ws: Workspace, name: str):
    seen = []
    walk(
        recipe,
        context(recipe, ws),
        ws,
        ("build", "install"),
        visit=lambda s: seen.append(s) or True,
    )
    return next(s for s in seen if s.name == name)


def _action_context(tmp_path: Path, **overrides):
    from cannbuild.build.actions import ActionContext

    ws = tmp_path / "ws"
    values = dict(
        toolkit_home=tmp_path / "toolkit",
        overlay=ws / "overlay",
        stage=ws / "stage",
        opp=ws / "opp",
        vendor_dirs={"lib": ws / "opp" / "vendors" / "custom_lib"},
    )
    values.update(overrides)
    return ActionContext(**values)


def test_the_vendor_install_starts_from_a_clean_folder_and_must_leave_set_env(recipe, tmp_path):
    from cannbuild.build.actions import ACTIONS, ActionFailed

    ws = Workspace(root=tmp_path / "ws")
    step = _planned(recipe, ws, "install")
    ctx = _action_context(tmp_path)
    assert step.owner == "lib"  # an install step belongs to the repo of the build it runs after
    stale = ctx.vendor_dir(step) / "op_api" / "lib" / "libcust_opapi.so"
    stale.parent.mkdir(parents=True)
    stale.write_text("an older package")
    vendor = ACTIONS["vendor"]
    vendor.prepare(step, ctx, "r1")
    assert not stale.exists() and ctx.opp.is_dir()  # nothing of the old package survives
    with pytest.raises(ActionFailed, match="set_env.bash is missing"):
        vendor.finish(step, ctx)  # an installer that exits 0 without installing fails
    set_env = ctx.vendor_dir(step) / "bin" / "set_env.bash"
    set_env.parent.mkdir(parents=True)
    set_env.write_text("export ASCEND_CUSTOM_OPP_PATH=x\n")
    assert vendor.finish(step, ctx) == ([], [str(set_env)])  # the stamp then watches it


def test_the_overlay_action_stages_into_an_emptied_prefix_and_fails_on_an_empty_stage(
    recipe, tmp_path
):
    from cannbuild.build.actions import ACTIONS, ActionFailed

    ws = Workspace(root=tmp_path / "ws")
    step = _planned(recipe, ws, "build")
    ctx = _action_context(tmp_path)
    leftover = ctx.stage / "cann" / "old.h"
    leftover.parent.mkdir(parents=True)
    leftover.write_text("from an earlier install")
    overlay = ACTIONS["overlay"]
    overlay.prepare(step, ctx, "r1")
    assert ctx.stage.is_dir() and not any(ctx.stage.iterdir())
    with pytest.raises(ActionFailed):
        overlay.finish(step, ctx)  # the installer staged nothing: no overlay from nothing
