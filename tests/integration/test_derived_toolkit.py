"""The derived toolkit check end to end on an emulated host (issue 29, "Done when").

A header the stand-in ops-transformer's host code includes (as the real
attention/flash_attention_score/op_host/flash_attention_score_def.cpp:16 does at v9.0.0)
is taken out of a sandbox toolkit: doctor names it, its package and the file that
includes it, and setup stops before any step runs.  Put back, the build finds it where
the derived check did (the compiler's dependency file names the toolkit's copy).
"""

import json
import os
from pathlib import Path

from cannbuild.sandbox import SandboxSpec, create_sandbox

HEADER = "register/op_def_registry.h"
ROW = f"recipe.derived.header.{HEADER}"
INCLUDER = "attention/flash_attention_score/op_host/flash_attention_score_def.cpp:"


def doctor_rows(cli):
    proc = cli("doctor", "--json")
    return {c["id"]: c for c in json.loads(proc.stdout)["checks"]}, proc


def built_anything(ws: Path) -> bool:
    stamps = list((ws / "stamps").glob("*.json")) if (ws / "stamps").is_dir() else []
    logs = list((ws / "logs").rglob("*-build.log")) if (ws / "logs").is_dir() else []
    return bool(stamps or logs or (ws / "src/ops-transformer/build").exists())


def test_a_missing_toolkit_header_stops_setup_before_any_build_and_doctor_names_it(
    cli_for, tmp_path
):
    cli = cli_for("A3-9.0.0")
    own = tmp_path / "sandbox"
    info = create_sandbox(SandboxSpec(dir=own, variant="A3", cann="9.0.0")).info
    cli.sandbox = own
    header = info.toolkit / f"{os.uname().machine}-linux/include/{HEADER}"
    # before the sources are checked out the derived check cannot run, and says so
    rows, proc = doctor_rows(cli)
    assert rows["recipe.derived"]["status"] == "skip" and ROW not in rows
    assert proc.returncode == 0, proc.stderr
    # fetch checks the sources out and lays the toolkit's host side out from its repos
    # (metadef, ge, ...): the header is the one ge's package installs
    proc = cli("fetch")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kept = header.read_bytes()
    header.unlink()
    # setup derives and stops (exit 3) before any step
    proc = cli("setup")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert f"doctor check {ROW} failed" in proc.stderr
    assert "CANN package metadef" in proc.stderr and INCLUDER in proc.stderr
    assert not built_anything(cli.ws)
    # a second setup stops at the session already (the checkout is there), still building nothing
    proc = cli("setup")
    assert proc.returncode == 3 and f"doctor check {ROW} failed" in proc.stderr
    assert not built_anything(cli.ws)
    rows, proc = doctor_rows(cli)
    assert proc.returncode == 1
    row = rows[ROW]
    assert row["status"] == "fail" and row["blocking"]
    assert "CANN package metadef" in row["detail"] and INCLUDER in row["detail"]
    assert "Install the CANN package metadef" in row["hint"]
    # put back: the check passes, and the compile of that file reads the toolkit's copy
    header.write_bytes(kept)
    proc = cli("build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    build = cli.ws / "src/ops-transformer/build"
    depfile = next(build.rglob("flash_attention_score_def.cpp.o.d"))
    named = [
        (build / token).resolve()
        for token in depfile.read_text().replace("\\\n", " ").split()
        if token.endswith(HEADER)
    ]
    assert named == [header.resolve()]
    # the run kept the derivation: doctor reads it from the memo
    rows, _ = doctor_rows(cli)
    assert rows["recipe.derived.ops-transformer-build"]["status"] == "pass"
    assert rows["recipe.derived.ops-transformer-build"]["detail"].endswith("(memo)")
