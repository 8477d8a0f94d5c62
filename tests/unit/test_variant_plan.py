"""A build variant is a plan: the walk over its own copy and prefix, taking the steps
before its repo's as the baseline built them, up to date until one of its inputs (a
define, the patch) changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from cannbuild.build.plan import NEEDS_RUN, UP_TO_DATE, StepContext, recipe_templates, walk
from cannbuild.build.session import BuildContext, CannFacts
from cannbuild.build.stamps import artifact_record, read_stamp
from cannbuild.build.variant import Variant, variant_context, walked_steps
from cannbuild.recipes import load_recipe
from cannbuild.workspace import Workspace

from tinyrecipe import stamp_as_done

RECIPE = """
[recipe]
name = "two-repos"
train = "0.1"
opbase = "toolkit"

[repos.base]
url = "https://example.invalid/base.git"
tag = "v1"

[repos.lib]
url = "https://example.invalid/lib.git"
tag = "v1"

[[steps]]
name = "base-build"
repo = "base"
command = "steps/build.j2"
produces = ["out/base.run"]

[[steps]]
name = "base-install"
after = ["base-build"]
command = "steps/install.j2"
action = "overlay"

[[steps]]
name = "lib-build"
repo = "lib"
after = ["base-install"]
command = "steps/build.j2"
produces = ["out/lib.run"]

[[steps]]
name = "lib-install"
phase = "install"
after = ["lib-build"]
command = "steps/install.j2"
action = "vendor"

[validate]
library = "lib.so"
symbols = []
"""
PHASES = ("build", "install")


@pytest.fixture
def recipe(tmp_path):
    folder = tmp_path / "recipes"
    (folder / "steps").mkdir(parents=True)
    (folder / "two.toml").write_text(RECIPE)
    (folder / "steps" / "build.j2").write_text("bash build.sh --soc={{ soc }} -j{{ jobs }}\n")
    (folder / "steps" / "install.j2").write_text(
        "bash {{ artifacts.values() | first }} --install-path={{ opp }}\n"
    )
    return load_recipe(folder / "two.toml")


def build_context(ws: Workspace) -> BuildContext:
    toolkit = Path("/usr/local/Ascend/cann")
    return BuildContext(
        cann=CannFacts(
            version="8.5.0", release="8.5.0", train="8.5", path=toolkit, home=toolkit, layout="cann"
        ),
        arch="x86_64",
        soc="ascend910b",
        jobs=8,
        ops="flash_attention_score",
        vendor_name="custom",
        workspace=ws.root,
        src={r: ws.checkout(r) for r in ("base", "lib")},
        third_party={r: ws.checkout(r) / "third_party" for r in ("base", "lib")},
        opp=ws.opp,
        stage=ws.stage,
        overlay=ws.overlay,
        opbase_install_path=ws.stage,
    )


def baseline(recipe, ws: Workspace) -> StepContext:
    return StepContext(
        values=build_context(ws).as_jinja(),
        sources={
            r: {"commit": c * 40, "nested": {}, "third_party": {}}
            for r, c in (("base", "a"), ("lib", "b"))
        },
        toolkit={"version": "8.5.0", "path": "/usr/local/Ascend/cann"},
        hashed_env={"CXXFLAGS": "-O2"},
        base_env={"PATH": "/usr/bin", "CXXFLAGS": "-O2"},
        overlay_env={"PATH": "/usr/bin", "CXXFLAGS": "-O2", "ASCEND_HOME_PATH": str(ws.overlay)},
        extra_env={"TMPDIR": str(ws.tmp)},
        recipe=recipe.name,
        templates=recipe_templates(recipe),
    )


def build(recipe, ctx: StepContext, ws: Workspace) -> None:
    """What a successful run leaves in `ws`: each walked step's stamp and package."""

    def visit(step) -> bool:
        artifacts = []
        if step.spec.produces:
            package = step.cwd / step.spec.produces[0]
            package.parent.mkdir(parents=True, exist_ok=True)
            package.write_text(step.command)
            artifacts.append(artifact_record(package))
        stamp_as_done(ws, step, artifacts)
        return True

    walk(recipe, ctx, ws, PHASES, visit=visit)


def variant_of(recipe, ws: Workspace, **how) -> tuple:
    """The variant q32 of `lib` and its step context, its copy's identity in the sources
    (as steps.run_steps gives it when the walk reaches a step of `lib`)."""
    variant = Variant(root=ws.root / "variants" / "q32", repo="lib", **how)
    ctx = variant_context(baseline(recipe, ws), build_context(ws), variant, recipe, ws)
    sources = {**ctx.sources, "lib": variant.identity(ctx.sources["lib"])}
    return variant, replace(ctx, sources=sources)


def test_a_variant_walks_its_repos_steps_over_its_copy_under_the_baselines_overlay(
    recipe, tmp_path
):
    ws = Workspace(root=tmp_path / "ws")
    build(recipe, baseline(recipe, ws), ws)
    assert walked_steps(recipe, "lib") == ("lib-build", "lib-install")
    variant, ctx = variant_of(recipe, ws, defines=(("FA_ROWS", "32"),))
    steps = walk(recipe, ctx, variant.ws, PHASES)
    assert [(s.name, s.status) for s in steps] == [
        ("lib-build", NEEDS_RUN),
        ("lib-install", NEEDS_RUN),
    ]
    lib_build, lib_install = steps
    assert lib_build.reason == "never built in this workspace"  # its own stamps
    assert lib_build.cwd == variant.checkout == ws.root / "variants/q32/src/lib"
    assert lib_build.env["CXXFLAGS"] == "-O2 -DFA_ROWS=32"
    # after base-install's overlay, as the baseline's lib-build; its output read where it is
    assert lib_build.env["ASCEND_HOME_PATH"] == str(ws.overlay)
    assert lib_build.inputs["env_mode"] == "overlay"
    given = read_stamp(ws, "base-install")
    assert lib_build.inputs["upstream"] == {"base-install": given["outputs_digest"]}
    assert lib_install.command.endswith(f"--install-path={variant.ws.opp}")
    assert lib_install.cwd == variant.root and lib_build.env["TMPDIR"] == str(variant.ws.tmp)


def test_an_unchanged_variant_is_up_to_date_and_a_new_define_or_patch_rebuilds_it(recipe, tmp_path):
    ws = Workspace(root=tmp_path / "ws")
    build(recipe, baseline(recipe, ws), ws)
    before = {p.name: p.read_bytes() for p in ws.stamps.iterdir()}
    variant, ctx = variant_of(recipe, ws, defines=(("FA_ROWS", "32"),))
    build(recipe, ctx, variant.ws)
    assert {p.name: p.read_bytes() for p in ws.stamps.iterdir()} == before  # baseline's untouched
    assert sorted(p.name for p in variant.ws.stamps.iterdir()) == [
        "lib-build.json",
        "lib-install.json",
    ]
    again = walk(
        recipe, variant_of(recipe, ws, defines=(("FA_ROWS", "32"),))[1], variant.ws, PHASES
    )
    assert [s.status for s in again] == [UP_TO_DATE, UP_TO_DATE]
    other = walk(
        recipe, variant_of(recipe, ws, defines=(("FA_ROWS", "64"),))[1], variant.ws, PHASES
    )
    assert other[0].reason == "environment changed: CXXFLAGS"
    patched = variant_of(recipe, ws, defines=(("FA_ROWS", "32"),), patch_sha256="f" * 64)[1]
    assert walk(recipe, patched, variant.ws, PHASES)[0].reason == "patch changed"
