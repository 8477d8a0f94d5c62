"""Several vendor packages installed side by side (issue 27, vllm-ascend 13512, 11417,
9258, 7095): the one file a user sources sets ASCEND_CUSTOM_OPP_PATH in the order asked
for, the first vendor that ships an operator serves it, and a second one that ships it
too is a warning in doctor and diagnose; status lists every vendor with its repo, commit
and operators.  The vendor trees are real small ones, laid out as a custom package's
installer leaves them (`install.sh --install-path=<opp>`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

from cannbuild import vendors
from cannbuild.build.session import locking_session
from cannbuild.build.stamps import artifact_record, write_stamp
from cannbuild.diagnose import DiagnoseInputs
from cannbuild.diagnose.registration import vendor_checks
from cannbuild.housekeeping import workspace_status
from cannbuild.options import resolve_options
from cannbuild.profile.shape import AttentionShape
from cannbuild.sources.lock import Lock, LockedRepo, write_lock
from cannbuild.transaction import install_order, made
from cannbuild.workspace import Workspace

from multirecipe import write_recipe

SOC = "ascend910b"


def vendor_tree(opp: Path, folder: str, ops: Dict[str, str]) -> Path:
    """A vendor folder as a custom package's installer leaves it: the op_impl config of
    `ops` (op type -> opFile) for the SoC, and bin/set_env.bash prepending itself."""
    vendor = opp / "vendors" / folder
    config = vendor / "op_impl" / "ai_core" / "tbe" / "config" / SOC
    config.mkdir(parents=True)
    (config / f"aic-{SOC}-ops-info.json").write_text(
        json.dumps({t: {"opFile": {"value": f}} for t, f in ops.items()})
    )
    (vendor / "bin").mkdir()
    # what the installers write (ops-math@9.1.0 scripts/custom/install.sh:295-313)
    (vendor / "bin" / "set_env.bash").write_text(
        f"export ASCEND_CUSTOM_OPP_PATH={vendor}:${{ASCEND_CUSTOM_OPP_PATH}}\n"
    )
    return vendor


@pytest.fixture
def two_vendors(tmp_path):
    """custom_transformer and custom_math, both shipping Segsum (a clash) besides their own."""
    opp = tmp_path / "ws" / "opp"
    transformer = vendor_tree(
        opp,
        "custom_transformer",
        {"FlashAttentionScore": "flash_attention_score", "ExpSegsum": "segsum"},
    )
    math = vendor_tree(opp, "custom_math", {"ExpSegsum": "segsum", "IsFinite": "is_finite"})
    return opp, transformer, math


def sourced_path(script: Path, before: str = "") -> List[str]:
    """ASCEND_CUSTOM_OPP_PATH after `source script` in a clean bash."""
    proc = subprocess.run(
        ["bash", "-c", f'source "{script}"; printf %s "$ASCEND_CUSTOM_OPP_PATH"'],
        env={"PATH": "/usr/bin:/bin", "ASCEND_CUSTOM_OPP_PATH": before},
        capture_output=True,
        text=True,
        check=True,
    )
    return [e for e in proc.stdout.split(":") if e]


@pytest.mark.parametrize("order", [("transformer", "math"), ("math", "transformer")])
def test_the_source_line_sets_the_vendors_in_the_order_asked_for(two_vendors, tmp_path, order):
    opp, transformer, math = two_vendors
    dirs = {"transformer": transformer, "math": math}
    asked = [dirs[name] for name in order]
    script = vendors.write_source_file(tmp_path / "ws", opp, asked, "--repos ...")
    assert script == opp / "set_env.bash"
    assert sourced_path(script) == [str(d) for d in asked]
    # a path the shell had keeps its place after them
    assert sourced_path(script, "/elsewhere") == [*map(str, asked), "/elsewhere"]
    assert vendors.source_order(opp) == asked  # read back: status and doctor use it


def test_the_first_vendor_serves_an_op_both_ship_and_the_other_is_warned_of(two_vendors):
    opp, transformer, math = two_vendors
    found = {v.name: v for v in vendors.installed(opp)}
    assert found["custom_math"].ops == ("is_finite", "segsum")
    first = [found["custom_transformer"], found["custom_math"]]
    served = {s.name: s for s in vendors.serving(first)}
    assert served["ExpSegsum"].by == transformer and served["ExpSegsum"].shadowed == (math,)
    assert served["IsFinite"].by == math and served["IsFinite"].shadowed == ()
    rows = vendors.serving_checks(first, "this order")
    assert [r.status for r in rows] == ["pass", "warn"]
    assert "ExpSegsum: custom_transformer" in rows[0].detail
    assert rows[1].id == "vendors.shadowed"
    assert rows[1].detail.startswith(
        "op type ExpSegsum is shipped by custom_transformer and custom_math: custom_transformer "
        "serves it (this order), custom_math is never used for it"
    )
    # the other order: the other vendor serves it
    flipped = {s.name: s for s in vendors.serving(first[::-1])}
    assert flipped["ExpSegsum"].by == math
    # vendors that ship nothing in common: no warning
    alone = vendors.serving_checks([found["custom_math"]], "this order")
    assert [r.status for r in alone] == ["pass"]


def test_doctor_judges_this_shells_order_else_the_workspaces(two_vendors, tmp_path):
    opp, transformer, math = two_vendors
    vendors.write_source_file(tmp_path / "ws", opp, [math, transformer], "--repos ...")
    rows = vendors.workspace_checks(opp, {})
    assert "the order" in rows[0].detail and "set_env.bash sets" in rows[0].detail
    assert "custom_math serves it" in rows[1].detail
    shell = {"ASCEND_CUSTOM_OPP_PATH": f"{transformer}/:{math}"}
    rows = vendors.workspace_checks(opp, shell)
    assert "this shell's ASCEND_CUSTOM_OPP_PATH order" in rows[0].detail
    assert "custom_transformer serves it" in rows[1].detail
    assert vendors.workspace_checks(tmp_path / "nothing", {}) == []


def test_diagnose_reports_registration_per_vendor(two_vendors, tmp_path):
    _, transformer, math = two_vendors
    inputs = DiagnoseInputs(
        vendor_dir=transformer,
        soc=SOC,
        checkout=tmp_path / "src",
        env={"ASCEND_CUSTOM_OPP_PATH": str(math)},
        opp_path=None,
        shape=AttentionShape(dtype="fp16"),
        vendors=(("ops-transformer", transformer), ("ops-math", math)),
    )
    rows = {r.id: r for r in vendor_checks(inputs, [str(math)])}
    assert rows["registration.vendor.ops-math"].status == "pass"
    assert "entry 1 of 1" in rows["registration.vendor.ops-math"].detail
    missing = rows["registration.vendor.ops-transformer"]
    assert missing.status == "warn" and "not on ASCEND_CUSTOM_OPP_PATH" in missing.detail
    # only the vendors on the path are judged for serving
    assert "custom_math" in rows["vendors.serving"].detail
    assert "vendors.shadowed" not in rows


def stamp(ws: Workspace, name: str, inputs: Dict[str, object], **kw: object) -> None:
    write_stamp(
        ws,
        name,
        run_id="20261202-120000-1",
        input_hash=name,
        inputs=inputs,
        artifacts=kw.get("artifacts", []),  # type: ignore[arg-type]
        requires=kw.get("requires", []),  # type: ignore[arg-type]
        duration_s=1.0,
        log=ws.logs / f"{name}.log",
    )


def test_status_lists_every_vendor_with_its_repo_commit_and_ops(two_vendors, tmp_path):
    opp, transformer, math = two_vendors
    ws = Workspace(root=tmp_path / "ws")
    commits = {"ops-transformer": "1" * 40, "ops-math": "2" * 40}
    for repo, vendor in (("ops-transformer", transformer), ("ops-math", math)):
        package = ws.checkout(repo) / "build_out" / f"{repo}.run"
        package.parent.mkdir(parents=True)
        package.write_text("package")
        artifact = artifact_record(package)
        stamp(ws, f"{repo}-build", {"source": {"commit": commits[repo]}}, artifacts=[artifact])
        build = json.loads((ws.stamps / f"{repo}-build.json").read_text())
        stamp(
            ws,
            f"{repo}-install",
            {"upstream": {f"{repo}-build": build["outputs_digest"]}},
            requires=[str(vendor / "bin" / "set_env.bash")],
        )
    lock_file = tmp_path / "cannbuild.lock"
    write_lock(
        lock_file,
        Lock(
            recipe="cann-9.0",
            recipe_digest="x",
            toolkit_version="9.0.0",
            soc=SOC,
            arch="x86_64",
            repos=tuple(
                LockedRepo(name=r, url=f"https://x/{r}.git", ref="tag v9.0.0", commit=c)
                for r, c in commits.items()
            ),
            third_party=(),
        ),
    )
    vendors.write_source_file(ws.root, opp, [transformer, math], "--repos ...")
    data = workspace_status(ws.root, lock_file)
    listed = [(v["repo"], v["commit"], v["ops"], v["vendor"]) for v in data["installed"]]
    assert listed == [
        (
            "ops-transformer",
            commits["ops-transformer"],
            ["flash_attention_score", "segsum"],
            str(transformer),
        ),
        ("ops-math", commits["ops-math"], ["is_finite", "segsum"], str(math)),
    ]
    assert data["source"] == str(opp / "set_env.bash")
    assert data["install"]["state"] == "installed"
    # a vendor whose install is gone is not listed, and the install is not whole
    (math / "bin" / "set_env.bash").unlink()
    data = workspace_status(ws.root, lock_file)
    assert [v["repo"] for v in data["installed"]] == ["ops-transformer"]
    assert data["install"]["state"] == "not installed"


def test_an_aclnn_entry_point_two_libraries_export_is_a_clash_too(two_vendors):
    """torch_npu takes an aclnn API from the first libcust_opapi.so exporting it: the
    two-phase pair (aclnnX with aclnnXGetWorkspaceSize) counts, a lone symbol does not."""
    opp, transformer, math = two_vendors
    for vendor in (transformer, math):
        (vendor / "op_api" / "lib").mkdir(parents=True)
        (vendor / "op_api" / "lib" / "libcust_opapi.so").write_bytes(b"\x7fELF")
    exported = {
        transformer: {"aclnnFlashAttentionScore", "aclnnFlashAttentionScoreGetWorkspaceSize"},
        math: {"aclnnFlashAttentionScore", "aclnnFlashAttentionScoreGetWorkspaceSize", "aclnnLone"},
    }
    reader = lambda lib: exported[lib.parent.parent.parent]  # noqa: E731
    found = vendors.installed(opp, reader)
    assert [v.apis for v in found] == [("aclnnFlashAttentionScore",)] * 2
    rows = vendors.serving_checks(found, "by name")
    assert any(
        r.status == "warn" and r.detail.startswith("aclnn entry point aclnnFlashAttentionScore")
        for r in rows
    )
    assert vendors.installed(opp)[0].apis == ()  # without the reader no library is read


def test_after_the_installs_the_run_writes_the_source_line_in_the_repos_order(tmp_path):
    """What setup does after its install steps (transaction.install_order, made): with
    both repos of the two-repo recipe installed, one file in --repos order; what the
    closing lines name; with one vendor, that vendor's own script as before."""
    recipe = write_recipe(tmp_path / "recipes")
    options = resolve_options(
        {"soc": "A2", "workspace": str(tmp_path / "ws"), "recipe": str(recipe)}, {}, {}
    )
    session = locking_session(options.with_(repos=("ops-beta", "ops-alpha")), {}, tmp_path, "9.0.0")
    opp = session.ws.opp
    beta = vendor_tree(opp, "custom_beta", {"Segsum": "segsum"})
    alpha = vendor_tree(opp, "custom_alpha", {"Segsum": "segsum", "Attn": "attn"})
    for repo, vendor in (("ops-alpha", alpha), ("ops-beta", beta)):
        stamp(session.ws, f"{repo}-build", {"source": {"commit": "3" * 40}})
        build = json.loads((session.ws.stamps / f"{repo}-build.json").read_text())
        stamp(
            session.ws,
            f"{repo}-install",
            {"upstream": {f"{repo}-build": build["outputs_digest"]}},
            requires=[str(vendor / "bin" / "set_env.bash")],
        )
    script = install_order(session)
    assert script == opp / "set_env.bash"
    assert sourced_path(script) == [str(beta), str(alpha)]
    what = made(session)
    assert what.vendors == (("ops-beta", beta), ("ops-alpha", alpha))
    assert what.set_env == script and what.installed == beta
    alone = locking_session(options.with_(repos=("ops-alpha",)), {}, tmp_path, "9.0.0")
    assert install_order(alone) is None
    assert made(alone).set_env == alpha / "bin" / "set_env.bash"
