"""`validate --package X.run`: what is validated is what is shipped."""

from __future__ import annotations

import hashlib
import json
import subprocess


def test_a_shipped_package_is_validated_in_a_workspace_that_never_built_it(installed, cli):
    package = next(installed.ws.glob("src/ops-transformer/build_out/cann-ops-transformer-*.run"))
    digest = hashlib.sha256(package.read_bytes()).hexdigest()
    proc = cli("validate", "--require-device", "--package", str(package))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = cli.report()
    assert report["validation"]["status"] == "PASS"
    assert report["package"]["sha256"] == digest and report["package"]["path"] == str(package)
    assert report["package"]["installed_into"].startswith(str(cli.ws / "validate" / "package"))
    assert report["built_from"] is None and not (cli.ws / "src").exists()  # nothing was built
    assert f"(sha256 `{digest}`)" in (cli.ws / "reports" / "latest" / "report.md").read_text()
    checks = {c["id"] for c in report["validation"]["checks"]}
    assert "example" not in checks and report["package"]["example"].startswith("not run")


def test_a_damaged_or_wrong_package_fails_with_its_name(installed, cli, tmp_path):
    package = next(installed.ws.glob("src/ops-transformer/build_out/cann-ops-transformer-*.run"))
    damaged = tmp_path / package.name
    data = bytearray(package.read_bytes())
    data[-100] ^= 0xFF  # one payload byte: the archive's own sha256 check refuses it
    damaged.write_bytes(bytes(data))
    proc = cli("validate", "--package", str(damaged))
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert (
        "does not install into a scratch prefix" in proc.stderr and "Traceback" not in proc.stderr
    )
    assert hashlib.sha256(bytes(data)).hexdigest() in proc.stderr
    report = json.loads((cli.ws / "reports" / "latest" / "report.json").read_text())
    assert report["build"]["status"] == "failed"  # the run still left its report
    not_a_run = tmp_path / "notes.txt"
    not_a_run.write_text("x")
    proc = cli("validate", "--package", str(not_a_run))
    assert proc.returncode == 2 and "is not a .run file" in proc.stderr
    (tmp_path / "empty.run").touch()
    for given, said in (
        (tmp_path / "empty.run", "is empty"),
        (tmp_path / "gone.run", "does not exist"),
    ):
        proc = cli("validate", "--package", str(given))
        assert proc.returncode == 2 and f"{given} {said}." in proc.stderr, proc.stderr


def test_a_shipped_package_with_a_wrong_kernel_fails_validation(cli_for, tmp_path):
    builder = cli_for("A2-8.5.0", tmp_path / "builder")
    faulty = builder("install", env=builder.env(CANNBUILD_SANDBOX_FAULT="fa-wrong-scale"))
    assert faulty.returncode == 0, faulty.stderr  # it builds and installs: only numbers are off
    package = next(builder.ws.glob("src/ops-transformer/build_out/cann-ops-transformer-*.run"))
    checker = cli_for("A2-8.5.0", tmp_path / "checker")
    proc = checker("validate", "--package", str(package), "--cases", "fp16_bsh_s128_d128_causal")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    report = checker.report()
    assert report["validation"]["status"] == "FAIL"
    assert report["package"]["sha256"] == hashlib.sha256(package.read_bytes()).hexdigest()
    capi = next(c for c in report["validation"]["checks"] if c["id"] == "capi")
    assert capi["status"] == "FAIL" and "exceeds the bound" in capi["message"]


def test_validate_on_a_sandbox_remade_since_the_build_lays_its_host_side_again(tmp_path):
    from conftest import Cli

    (tmp_path / "ws").mkdir()
    cli = Cli(tmp_path / "ws", tmp_path / "sandbox", "A2", "8.5.0")  # a sandbox of its own
    built = cli("install")
    assert built.returncode == 0, built.stderr
    # as another cannbuild finds it (its emulation changed): the sandbox is made anew, and its
    # toolkit holds no host side, which the repository's example compiles against (acl/acl.h)
    info = tmp_path / "sandbox" / "sandbox.json"
    info.write_text(json.dumps({**json.loads(info.read_text()), "key": "another cannbuild's"}))
    proc = cli("validate", "--cases", "fp32_bsh_s128_d64_gqa")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sandbox: making an A2 host" in proc.stderr
    assert "sandbox toolkit: host side laid out from opbase@" in proc.stderr
    example = next(c for c in cli.report()["validation"]["checks"] if c["id"] == "example")
    assert example["status"] == "PASS", example


def test_a_package_built_without_the_checked_operator_is_not_judged_by_its_check(cli, tmp_path):
    """`--ops rope_x`: a package of another operator of the repo has none of the API the
    repo's check calls (FlashAttention's); that is SKIPPED naming why, not a FAIL of a sound
    build.  The same library under the default --ops, which holds the operator, still FAILs."""
    proc = cli("setup")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the package as --ops rope_x builds it: a library of another API (a real .so), and the
    # operator's folder in the checkout (--ops names folders there)
    (cli.ws / "src/ops-transformer/attention/rope_x/op_host").mkdir(parents=True)
    source = tmp_path / "other.cpp"
    source.write_text('extern "C" int aclnnRopeX(void) { return 0; }\n')
    library = next(cli.ws.glob("opp/vendors/*/op_api/lib/libcust_opapi.so"))
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    proc = cli("validate", "--ops", "rope_x", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["library"]["status"] == "PASS"
    assert "holds no flash_attention_score" in checks["library"]["message"]
    assert checks["capi"]["status"] == "SKIPPED"
    assert "built with --ops rope_x, without flash_attention_score" in checks["capi"]["message"]
    proc = cli("validate", "--ops", "rope_x", "--require-device")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    proc = cli("validate")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    said = " ".join((proc.stdout + proc.stderr).split())  # wrapped to the terminal's width
    assert "does not export aclnnFlashAttentionScore" in said, said
