"""Untrusted records stay data (issue 41 item 6): a target.json is shown with its terminal
escapes written out, may not send a run to make a sandbox outside the workspace, and
names no repo silently; secret-looking variable names of git hosts and databases are
redacted; `--repos ''` and `--repos ,,` are usage errors, as `--shapes ''` is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from msgspec.structs import asdict
from test_target import owned_workspace, sandbox_target

from cannbuild.redact import redact, redact_env, secret_name
from cannbuild.target import Target, target_file

from clirun import run_route


def _record(ws: Path, target: Target) -> None:
    target_file(ws).write_text(json.dumps(asdict(target)))


def test_status_shows_a_records_terminal_escapes_as_text(tmp_path: Path) -> None:
    ws = owned_workspace(tmp_path / "ws")
    _record(ws, sandbox_target(set_by="cannbuild setup\x1b[2J\x1b[H", set_at="today\x07\x9b"))
    proc = run_route("cannbuild", "status", "-w", str(ws), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not {"\x1b", "\x07", "\x9b"} & set(proc.stdout + proc.stderr)
    assert "cannbuild setup\\x1b[2J\\x1b[H on today\\x07\\x9b" in proc.stdout, proc.stdout


def test_a_records_sandbox_folder_outside_the_workspace_is_refused(tmp_path: Path):
    ws = owned_workspace(tmp_path / "ws")
    outside = tmp_path / "elsewhere" / "sandbox"
    _record(ws, sandbox_target(sandbox_dir=str(outside)))
    proc = run_route("cannbuild", "plan", "-w", str(ws), cwd=tmp_path)
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, said
    assert str(target_file(ws)) in said and f"sandbox folder {outside}" in said
    assert not (tmp_path / "elsewhere").exists()  # nothing made there


def test_a_records_unknown_repos_are_named_by_status(tmp_path: Path) -> None:
    ws = owned_workspace(tmp_path / "ws")
    names = ("ops-transformer", *(f"nosuch{i}" for i in range(1000)))
    _record(ws, sandbox_target(repos=names))
    proc = run_route("cannbuild", "status", "-w", str(ws), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "names repos no recipe here lists: nosuch0, nosuch1," in proc.stdout
    assert "and 995 more" in proc.stdout and "ops-transformer" not in proc.stdout.split("lists:")[1]
    data = json.loads(
        run_route("cannbuild", "status", "--json", "-w", str(ws), cwd=tmp_path).stdout
    )
    assert len(data["target"]["unknown_repos"]) == 1000


@pytest.mark.parametrize(
    "name",
    # git hosts' personal access tokens and CI tokens, bearer tokens, databases' addresses
    [
        *("GH_PAT", "ADO_PAT", "GITLAB_TOKEN", "CI_JOB_TOKEN", "BITBUCKET_APP_PASSWORD", "BEARER"),
        *("JWT", "NETRC", "DSN", "PG_DSN", "DATABASE_URL", "MONGODB_URI", "REDIS_URL", "JDBC_URL"),
        *("SQLALCHEMY_DATABASE_URI", "PGPASSWORD", "MYSQL_PWD", "AZURE_SQL_CONNECTION_STRING"),
    ],
)
def test_credential_names_of_git_hosts_and_databases_are_secret(name: str) -> None:
    assert secret_name(name)
    assert redact_env({name: "s3cr3t-value"}) == {name: "***"}
    assert "s3cr3t" not in redact(f"export {name}=s3cr3t-value")


@pytest.mark.parametrize(
    "name", ["PATH", "PATTERN", "PWD", "DB_HOST", "SQL_TIMEOUT", "URL", "GIT_ASKPASS", "COMPAT"]
)
def test_names_that_only_look_alike_are_not_secret(name: str) -> None:
    assert not secret_name(name)


@pytest.mark.parametrize("value", ["", ",,", " , "])
def test_an_empty_repos_list_is_a_usage_error(tmp_path: Path, value: str) -> None:
    proc = run_route("cannbuild", "plan", "--repos", value, "-w", "ws", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert f"--repos has value {value!r}" in proc.stderr and "Traceback" not in proc.stderr


def test_the_sandbox_folder_the_run_asks_for_is_taken_though_since_deleted(tmp_path: Path):
    """`CANNBUILD_SANDBOX_DIR=D cannbuild setup --sandbox` made D and recorded it; with D
    deleted (a wiped /tmp), the same command was refused, exit 2 "remove target.json":
    a folder the run itself names is asked for, so the record is taken."""
    ws = owned_workspace(tmp_path / "ws")
    outside = tmp_path / "elsewhere" / "sandbox"
    _record(ws, sandbox_target(sandbox_dir=str(outside)))
    proc = run_route(
        "cannbuild", "plan", "-w", str(ws), cwd=tmp_path, CANNBUILD_SANDBOX_DIR=str(outside)
    )
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "names the sandbox folder" not in said and "Traceback" not in said, said
    assert proc.returncode == 0, said
