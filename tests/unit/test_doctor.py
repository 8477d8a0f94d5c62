import json
import os
from pathlib import Path

import pytest

from cannbuild.host.doctor import read_host
from cannbuild.host.judge_python import python_stack_checks
from cannbuild.host.pystack import PythonStack, read_python_stack
from cannbuild.options import resolve_options

from clirun import run_route
from hosttree import a2_host, clean_env, write


def doctor(tree, env=None, **cli):
    opts = resolve_options(
        {"sysroot": str(tree.root), "workspace": str(tree.root.parent / "ws"), **cli}, {}, {}
    )
    return read_host(opts, env or clean_env())


def rows(report):
    return {c.id: c for c in report.checks}


def test_a2_host_reads_completely(tree):
    a2_host(tree)
    report = doctor(tree)
    r = rows(report)
    assert r["toolkit"].status == "pass"
    assert r["set_env"].status == "pass"
    assert r["bisheng"].status == "pass"
    assert r["hardware"].status == "pass" and "Ascend910B3" in r["hardware"].detail
    assert r["kernels"].status == "pass"
    assert r["driver"].status == "pass"
    host = report.to_json()["host"]
    assert host["soc"] == "ascend910b" and host["variant"] == "A2" and host["chip"] == "Ascend910B3"
    assert host["npu_count"] == 8
    assert host["cann"]["layout"] == "cann" and host["cann"]["version"] == "8.5.0"
    assert host["driver"]["version"] == "25.3.rc1"
    assert report.build_env["ASCEND_HOME_PATH"].endswith("usr/local/Ascend/cann/")


def test_every_row_that_is_not_pass_has_a_hint(tree):
    tree.pci("d802", 8)
    report = doctor(tree)
    assert all(c.hint for c in report.checks if c.status != "pass")


def test_no_toolkit_is_a_blocking_failure(tree):
    report = doctor(tree)
    assert rows(report)["toolkit"].status == "fail"
    assert "toolkit" in [c.id for c in report.blocking]


def test_missing_kernels_package_names_the_run_file(tree):
    tree.toolkit_cann("8.5.0")
    tree.pci("d803", 16)
    check = rows(doctor(tree))["kernels"]
    assert check.status == "warn"
    assert f"Ascend-cann-A3-ops_8.5.0_linux-{tree.arch}.run" in check.hint


def test_missing_bisheng_blocks_the_build(tree):
    tk = tree.toolkit_cann("8.5.0")
    (tk / "compiler/ccec_compiler/bin/bisheng").unlink()
    check = rows(doctor(tree, soc="ascend910b"))["bisheng"]
    assert (check.status, check.blocking) == ("fail", True)


def test_soc_flag_differing_from_hardware_warns(tree):
    a2_host(tree)
    r = rows(doctor(tree, soc="ascend910_93"))
    assert r["soc"].status == "pass" and "ascend910_93" in r["soc"].detail
    assert r["soc.match"].status == "warn"


def test_no_npu_is_a_warning_and_soc_is_needed(tree):
    tree.toolkit_cann("8.5.0")
    r = rows(doctor(tree))
    assert r["hardware"].status == "warn" and "--soc=ascend910b" in r["hardware"].hint
    assert r["soc"].status == "fail"
    assert rows(doctor(tree, soc="ascend910b"))["soc"].status == "pass"


def test_driver_incompatible_with_toolkit_warns(tree):
    a2_host(tree, "9.0.0")  # driver 25.3.rc1 is not listed for 9.0.0
    check = rows(doctor(tree))["driver.compat"]
    assert check.status == "warn" and "26.0.RC1" in check.detail


def test_torch_npu_for_another_cann_is_caught(tree):
    tk = doctor(tree, soc="ascend910b").toolkit if a2_host(tree, "9.0.0") else None
    checks = {
        c.id: c
        for c in python_stack_checks(
            PythonStack(python=(3, 11), torch="2.7.1", torch_npu="2.7.1"), tk
        )
    }
    assert checks["torch_npu"].status == "warn"
    assert "2.9.0.post2" in checks["torch_npu"].hint


def test_torch_npu_for_another_torch_fails():
    checks = {
        c.id: c
        for c in python_stack_checks(
            PythonStack(python=(3, 11), torch="2.8.0", torch_npu="2.7.1.post2"), None
        )
    }
    assert checks["torch_npu"].status == "fail"
    assert "pip install torch==2.7.1" in checks["torch_npu"].hint


def cann_libraries(folder):
    for lib in (
        "libascendcl.so",
        "libhccl.so",
        "libacl_op_compiler.so",
        "libge_runner.so",
        "libgraph.so",
        "libacl_tdt_channel.so",
    ):
        write(folder / lib, "")
    return str(folder)


NPU_STACK = PythonStack(python=(3, 11), torch="2.13.0+cpu", torch_npu="2.13.0")


def test_torch_npu_without_cann_libraries_on_the_loader_path_says_import_torch_fails(tmp_path):
    checks = {c.id: c for c in python_stack_checks(NPU_STACK, None, {"LD_LIBRARY_PATH": ""})}
    row = checks["torch_import"]
    assert row.status == "warn" and "libascendcl.so is not on LD_LIBRARY_PATH" in row.detail
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in row.hint
    partial = tmp_path / "partial"
    write(partial / "libascendcl.so", "")  # a toolkit without the libraries torch_npu links
    row = {c.id: c for c in python_stack_checks(NPU_STACK, None, {"LD_LIBRARY_PATH": str(partial)})}
    assert "libhccl.so is not on LD_LIBRARY_PATH" in row["torch_import"].detail


def test_import_torch_works_with_the_toolkit_env_and_its_folders(tmp_path):
    home = tmp_path / "cann"
    for folder in ("runtime", "compiler", "opp"):
        (home / folder).mkdir(parents=True)
    env = {
        "LD_LIBRARY_PATH": cann_libraries(home / "lib64"),
        "ASCEND_HOME_PATH": str(home),
        "ASCEND_OPP_PATH": str(home / "opp"),
    }
    assert {c.id: c for c in python_stack_checks(NPU_STACK, None, env)}[
        "torch_import"
    ].status == "pass"
    (home / "compiler").rmdir()  # torch_npu's own import check wants it
    row = {c.id: c for c in python_stack_checks(NPU_STACK, None, env)}["torch_import"]
    assert row.status == "warn" and "compiler does not exist" in row.detail
    del env["ASCEND_OPP_PATH"]
    (home / "compiler").mkdir()
    row = {c.id: c for c in python_stack_checks(NPU_STACK, None, env)}["torch_import"]
    assert row.status == "warn" and "ASCEND_OPP_PATH is not set" in row.detail


def test_autoload_off_is_the_escape_from_a_failing_import_torch():
    env = {"LD_LIBRARY_PATH": "", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    row = {c.id: c for c in python_stack_checks(NPU_STACK, None, env)}["torch_import"]
    assert row.status == "pass" and "does not load torch_npu" in row.detail


def test_torch_npu_no_source_lists_warns_no_published_pairing(tree):
    tk = doctor(tree, soc="ascend910b").toolkit if a2_host(tree, "8.5.0") else None
    row = {c.id: c for c in python_stack_checks(NPU_STACK, tk, {})}["torch_npu"]
    assert row.status == "warn" and "no published pairing for torch_npu 2.13.0" in row.detail
    # what each source lists newest, and what is paired with this CANN instead
    assert "2.12.0 for CANN 9.1.0 by Ascend/pytorch COMPATIBILITY.en.md" in row.detail
    assert "2.9.0" in row.hint and "ascend-deployer 26.0.0" in row.hint


def test_versions_come_from_package_metadata(tmp_path, monkeypatch):
    site = tmp_path / "site"
    for name, version in (("torch", "2.7.1"), ("torch_npu", "2.7.1.post2")):
        write(
            site / f"{name}-{version}.dist-info" / "METADATA",
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        )
    monkeypatch.syspath_prepend(str(site))
    stack = read_python_stack()
    assert (stack.torch, stack.torch_npu) == ("2.7.1", "2.7.1.post2")


def test_malformed_version_files_become_rows(tree):
    tk = tree.toolkit_cann("8.5.0")
    (tk / f"{tree.arch}-linux" / "ascend_toolkit_install.info").write_text(
        "version=eight point five\n"
    )
    for comp in ("runtime", "toolkit", "compiler"):
        (tk / comp / "version.info").write_text("\x00\x01binary")
    report = doctor(tree, soc="ascend910b")
    assert rows(report)["toolkit"].status == "pass"  # folder name still tells 8.5.0
    assert any(c.id == "toolkit.files" for c in report.checks)


def cli(args, env):
    return run_route("cannbuild", *args, cwd=Path.cwd(), env=env, timeout=60)


def test_cli_json_shape_and_exit_code(tree, tmp_path):
    a2_host(tree)
    proc = cli(
        ["doctor", "--json", "--sysroot", str(tree.root), "--workspace", str(tmp_path / "ws")],
        clean_env(),
    )
    data = json.loads(proc.stdout)
    host = data["host"]
    for key in ("soc", "variant", "chip", "npu_count", "torch", "torch_npu"):
        assert key in host
    for key in ("path", "version", "layout", "found_by"):
        assert key in host["cann"]
    assert host["driver"]["version"] == "25.3.rc1"
    assert {"id", "status", "detail", "hint"} <= set(data["checks"][0])
    failed = any(c["status"] == "fail" for c in data["checks"])
    assert proc.returncode == (1 if failed else 0)


def test_cli_bad_cann_path_exits_1_with_a_hint_not_a_traceback(tree, tmp_path):
    proc = cli(["doctor", "--sysroot", str(tree.root), "--cann-path", str(tmp_path)], clean_env())
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "--cann-path" in proc.stdout


def test_cli_bad_soc_is_a_usage_error(tree):
    proc = cli(["doctor", "--sysroot", str(tree.root), "--soc", "ascend999"], clean_env())
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "--soc 'ascend999' is not a SoC" in proc.stderr


REAL_A2 = "a2-910b3-npu-smi-info-cann8.3.txt"


def a2_with_npu_smi(tree, transform):
    """The A2 host, its npu-smi printing the real capture changed by `transform`."""
    from hosttree import FIXTURES

    a2_host(tree)
    text = transform((FIXTURES / REAL_A2).read_text())
    capture = write(tree.root.parent / "npu-smi-info.txt", text)
    tree.npu_smi(None, body=f'#!/bin/sh\ncat "{capture}"\n')


def health(text, npu, value):
    """The capture with NPU `npu`'s Health cell set to `value` (same width)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"| {npu}     910B3"):
            lines[i] = line.replace("| OK            |", f"| {value:<14}|", 1)
    return "\n".join(lines) + "\n"


def busy(text):
    """A process row on NPU 0 in place of "No running processes found in NPU 0"."""
    row = "| No running processes found in NPU 0" + " " * 60
    old = next(line for line in text.splitlines() if line.startswith(row[:36]))
    return text.replace(
        old,
        "| 0       0                 | 48213         | python3                  | 3120                    |",
    )


def test_an_npu_reported_critical_fails_doctor(tree):
    a2_with_npu_smi(tree, lambda t: health(t, 3, "Critical"))
    r = rows(doctor(tree))
    assert r["npu.health"].status == "fail"
    assert "NPU 3 Critical" in r["npu.health"].detail
    assert "npu-smi info -t health" in r["npu.health"].hint


def test_an_npu_in_alarm_fails_and_one_in_warning_warns(tree):
    a2_with_npu_smi(tree, lambda t: health(t, 5, "Warning"))
    assert rows(doctor(tree))["npu.health"].status == "warn"
    a2_with_npu_smi(tree, lambda t: health(t, 1, "Alarm"))
    assert rows(doctor(tree))["npu.health"].status == "fail"


def test_healthy_npus_pass_and_a_busy_one_warns(tree):
    a2_with_npu_smi(tree, lambda t: t)
    r = rows(doctor(tree))
    assert r["npu.health"].status == "pass" and "npu.busy" not in r
    a2_with_npu_smi(tree, busy)
    r = rows(doctor(tree))
    assert r["npu.busy"].status == "warn"
    assert "python3 (pid 48213) on NPU 0" in r["npu.busy"].detail


@pytest.mark.parametrize("code", [0, 1])
def test_a_dcmi_refusal_in_a_container_names_the_held_device_not_the_driver(tree, code):
    """cann-environment.md 4.3: in a container npu-smi prints DrvMngGetConsoleLogLevel, then
    `dcmi module initialize failed. ret is -8005` (another container holds the NPU, or this
    one needs --privileged), exiting 0 or not."""
    a2_host(tree)
    tree.npu_smi(
        None,
        body="#!/bin/sh\necho 'DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)'\n"
        f"echo 'dcmi module initialize failed. ret is -8005'\nexit {code}\n",
    )
    row = rows(doctor(tree))["npu-smi"]
    assert row.status == "warn"
    assert row.detail.endswith("dcmi module initialize failed. ret is -8005"), row.detail
    assert "--privileged" in row.hint and "another container" in row.hint


def side_by_side(tree):
    """<= 8.3 with two versions installed, `latest` running 8.2.RC1 (cann-environment.md
    1.2: `version.cfg` says which one it runs)."""
    tree.pci("d802", 8)
    tree.driver()
    tree.toolkit_farm("8.2.RC1")
    newer = tree.ascend / "ascend-toolkit" / "8.3.RC1"
    tree._component_dirs(newer, "8.3.RC1")
    write(newer / f"{tree.arch}-linux/ascend_toolkit_install.info", "version=8.3.RC1\n")
    return newer


def test_a_cann_path_that_its_set_env_sh_does_not_set_up_blocks_naming_both(tree):
    newer = side_by_side(tree)
    r = rows(doctor(tree, cann_path="/usr/local/Ascend/ascend-toolkit/8.3.RC1"))
    assert r["toolkit"].status == "pass" and "8.3.RC1" in r["toolkit"].detail
    row = r["set_env"]
    assert row.status == "fail" and row.blocking, row
    assert "ascend-toolkit/latest, which runs" in row.detail
    assert str(newer.parent / "8.2.RC1") in row.detail
    assert "A build would use 8.2.RC1" in row.hint and "--cann-path" in row.hint


def test_a_set_env_sh_exporting_a_home_that_is_gone_fails(tree):
    """<= 8.3: `ascend-toolkit/set_env.sh` exports `latest`; with the `latest` links gone the
    version folder still builds nothing through it (torch_npu: `ASCEND_HOME_PATH : X does
    not exist`, cann-environment.md 4.3)."""
    import shutil

    side_by_side(tree)
    shutil.rmtree(tree.ascend / "ascend-toolkit" / "latest")
    row = rows(doctor(tree, cann_path="/usr/local/Ascend/ascend-toolkit/8.2.RC1"))["set_env"]
    assert row.status == "fail" and row.blocking, row
    assert "ascend-toolkit/latest, which does not exist" in row.detail


def test_the_version_latest_runs_passes_by_either_name(tree):
    side_by_side(tree)
    for path in (
        "/usr/local/Ascend/ascend-toolkit/8.2.RC1",
        "/usr/local/Ascend/ascend-toolkit/latest",
    ):
        assert rows(doctor(tree, cann_path=path))["set_env"].status == "pass", path


def test_installs_no_link_names_are_offered_as_cann_path_not_reinstalled(tree):
    """cann-environment.md 1.2/1.3: versions sit side by side and `cann` or
    `ascend-toolkit/latest` names the one that runs; with that link gone (uninstalling the
    newest removes it) the older ones are still there to build with."""
    tree.toolkit_cann("8.5.0")
    (tree.ascend / "cann").unlink()
    (tree.ascend / "ascend-toolkit" / "latest").unlink()
    row = rows(doctor(tree, soc="ascend910b"))["toolkit"]
    assert row.status == "fail"
    assert "/usr/local/Ascend/cann-8.5.0" in row.detail
    assert "--cann-path=/usr/local/Ascend/cann-8.5.0" in row.hint
    assert "Install Ascend-cann-toolkit" not in row.hint


def test_doctor_without_cann_offers_the_sandbox_and_names_each_place_once(tree):
    r = rows(doctor(tree))
    assert "cannbuild setup --sandbox" in r["toolkit"].hint
    places = [p.split(" (")[0] for p in r["toolkit"].detail.split("looked in ", 1)[1].split("; ")]
    assert len(places) == len(set(places)), r["toolkit"].detail
    for place in places:  # and once in all: not again as the rule that named it
        assert r["toolkit"].detail.count(place) == 1, r["toolkit"].detail


def test_on_a_40_column_terminal_the_rows_fit_and_every_fix_is_whole(tree, monkeypatch):
    import io

    from cannbuild import ui

    a2_host(tree)
    report = doctor(tree, soc="ascend910_93")
    for columns in ("40", "100"):
        monkeypatch.setenv("COLUMNS", columns)
        out = io.StringIO()
        ui.print_checks(report.checks, title="cannbuild doctor", stream=out)
        width = int(columns)
        wider = [x for x in out.getvalue().splitlines() if len(x) > width]
        # wider only by one long word that cannot break (a path, a package name): the rest
        # of the line fits (whatever the length of the test's temporary folder)
        unbroken = [x for x in wider if len(x) - len(max(x.split(), key=len)) > width]
        assert unbroken == [] and all(len(max(x.split(), key=len)) > width // 2 for x in wider)
        flat = " ".join(out.getvalue().split())
        assert all(" ".join(c.hint.split()) in flat for c in report.checks if c.status != "pass")


def test_a_toolkit_this_user_cannot_read_is_not_reported_missing():
    """A root install made without --install-for-all is there for every other user, but
    unreadable: 'install the toolkit' is the wrong fix, reading rights are."""
    from cannbuild.host.judge import _toolkit_checks
    from cannbuild.host.sysroot import Sysroot
    from cannbuild.host.toolkit import ToolkitSearch

    denied = "cannot be read (Permission denied)"  # what the search says of such a folder
    for explicit in (None, f"--cann-path /usr/local/Ascend/cann {denied}"):
        tried = (("default /usr/local/Ascend/cann", "/usr/local/Ascend/cann", denied),)
        found = ToolkitSearch(
            toolkit=None, tried=tried, installs=(), warnings=(), explicit_failure=explicit
        )
        row = next(c for c in _toolkit_checks(Sysroot(), found) if c.id == "toolkit")
        assert row.status == "fail" and row.blocking
        assert "/usr/local/Ascend/cann" in row.detail
        assert "Install Ascend-cann-toolkit" not in row.hint
        assert "--install-for-all" in row.hint and "read access" in row.hint


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder")
def test_an_unreadable_toolkit_folder_is_found_and_named(tree):
    tk = tree.toolkit_cann("8.5.0")
    tk.chmod(0o000)
    try:
        r = rows(doctor(tree, soc="ascend910b"))
    finally:
        tk.chmod(0o755)
    assert "cannot read it" in r["toolkit"].detail
    assert "--install-for-all" in r["toolkit"].hint


def test_a_cann_path_this_user_cannot_read_is_the_toolkit_row_not_a_write_error(tmp_path):
    """`--cann-path` at a folder this user may not read is the toolkit row's failure
    naming the flag, never "cannot write <it>/conf/sandbox_npu.ini" (exit 11): looking for
    a sandbox's mark inside it must not stop the run."""
    import shutil
    import subprocess
    import sys

    folder = tmp_path / "their toolkit"
    folder.mkdir()
    command = [
        sys.executable,
        "-m",
        "cannbuild",
        "build",
        "--cann-path",
        str(folder),
        "--soc",
        "A2",
    ]
    if os.geteuid() == 0:  # root reads every folder: run without the capabilities that let it
        capsh = shutil.which("capsh")
        if capsh is None:
            pytest.skip("running as root, and no capsh to drop cap_dac_override")
        line = " ".join(f"'{word}'" for word in command)
        command = [capsh, "--drop=cap_dac_override,cap_dac_read_search", "--", "-c", line]
    folder.chmod(0o000)
    try:
        done = subprocess.run(
            command, cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120
        )
    finally:
        folder.chmod(0o755)
    said = " ".join(done.stderr.split())
    assert done.returncode == 3, said
    assert f"--cann-path {folder} cannot be read (Permission denied)" in said
    assert "sandbox_npu.ini" not in said and "cannot write" not in said


def test_a_set_env_sh_that_hangs_is_said_in_words(tree, tmp_path, monkeypatch):
    """The brief's "a set_env.sh that hangs": its row says so, not the capture's command line."""
    import subprocess

    from cannbuild.host import reading
    from cannbuild.host.toolchain import capture_env

    a2_host(tree)
    script = write(tmp_path / "hangs.sh", "sleep 30\n")
    with pytest.raises(subprocess.TimeoutExpired) as hung:
        capture_env(script, clean_env(), timeout=0.5)  # the real exception, sooner

    def hangs(script, base):
        raise hung.value

    monkeypatch.setattr(reading, "capture_env", hangs)
    row = rows(doctor(tree))["set_env"]
    assert row.status == "fail"
    assert "still running after 0.5 s, so a command in it hangs" in row.detail
    assert "cannbuild-set-env" not in row.detail and "env -0" not in row.detail, row.detail


@pytest.mark.parametrize(
    "tail,said",
    [
        ("exit 0\n", "(exit 0)"),
        # the 9.x set_env.sh under `set -e` when /etc/ascend_install.info lacks the key
        # (cann-environment.md 1.3): grep fails and the sourcing shell ends there
        ("set -e\ngrep -iw driver_install_path_param /no/ascend_install.info\n", "(exit 2: grep"),
    ],
)
def test_a_set_env_sh_that_ends_the_shell_does_not_pass(tree, tail, said):
    """Nothing it exports reaches cannbuild, so the row cannot pass with an unset home."""
    tk = a2_host(tree)
    set_env = tk / "set_env.sh"
    set_env.write_text(tail + set_env.read_text())
    row = rows(doctor(tree))["set_env"]
    assert row.status == "fail" and row.blocking, row
    assert "ended the shell" in row.detail and said in row.detail, row.detail
    assert "must not `exit`" in row.hint


@pytest.mark.parametrize("name", ["my builds", "a;b", "new\nline"])
def test_a_workspace_path_the_cann_build_splits_blocks_the_build_up_front(tree, name):
    """opbase's cmake tests `if(EXISTS ${CANN_3RD_LIB_PATH}/...)` unquoted: in a path with
    a space or ';' the build failed seconds in on a missing protobuf archive (exit 4)."""
    a2_host(tree)
    row = rows(doctor(tree, workspace=str(tree.root.parent / name / ".cannbuild")))
    check = row["workspace.path"]
    assert (check.status, check.blocking) == ("fail", True)
    assert repr(name)[1:-1] in check.detail and "--workspace" in check.hint
    assert "workspace.path" not in rows(doctor(tree, workspace=str(tree.root.parent / "ü")))


def test_doctor_takes_the_ops_and_ops_release_its_recipe_rows_depend_on(tree, tmp_path):
    """The recipe rows read --ops-release (which train) and --ops (which operators' headers):
    doctor refused both flags although it honoured CANNBUILD_OPS and CANNBUILD_OPS_RELEASE."""
    a2_host(tree)
    base = ["doctor", "--json", "--sysroot", str(tree.root), "--workspace", str(tmp_path / "ws")]
    for extra in (["--ops-release", "9.9.0"], ["--ops", "flash_attention_score"]):
        proc = cli([*base, *extra], clean_env())
        assert proc.returncode in (0, 1), proc.stderr
        if extra[0] == "--ops-release":
            recipe = next(c for c in json.loads(proc.stdout)["checks"] if c["id"] == "recipe")
            assert recipe["status"] == "warn" and "--ops-release 9.9.0" in recipe["detail"]


def test_a_build_in_a_workspace_path_with_a_space_stops_naming_the_path(tree):
    """A build stops at the first failing row. A sandbox's toolkit lies in the workspace, so
    a space there also cuts set_env.sh's ASCEND_HOME_PATH: `setup --sandbox -w 'a b/ws'`
    said "doctor check set_env failed ... Reinstalling the toolkit recreates /tmp/a", not
    the path to change. The path's row comes before the toolkit's."""
    a2_host(tree)
    ids = [c.id for c in doctor(tree, workspace=str(tree.root.parent / "a b" / "ws")).checks]
    assert ids.index("workspace.path") < min(ids.index("toolkit"), ids.index("set_env")), ids
