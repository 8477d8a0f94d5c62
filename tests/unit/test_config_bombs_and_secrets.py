"""Hostile config files, secrets by a word of their name and out-of-range option values
(issue 25): each is one `cannbuild:` paragraph and exit 2, in bounded time
and memory, never a traceback, and a secret never reaches stdout, stderr, a plan, a step
log or a stamp."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List

import pytest
from warmcli import cap_memory

from cannbuild.bounded import STAMP, read_state
from cannbuild.redact import redact, secret_name
from cannbuild.tasks._config import state_warnings
from cannbuild.workspace import Workspace

from clirun import cannbuild, clean_env
from tinyrecipe import build_step, run_alone, tiny_recipe

HANG_GUARD = 30  # seconds: each case is refused in about one; the bombs ran for minutes
MEMORY_CAP = 1 << 30  # the bombs grew past 2.8 GB


def refused_once(proc: subprocess.CompletedProcess, *named: str) -> None:
    """Exit 2, no traceback, one `cannbuild:` paragraph holding each of `named`."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out, out
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cannbuild: "), proc.stderr
    for word in named:
        assert word in lines[0], lines[0]


# --- YAML and JSON config files: aliases, loops, nesting ----------------------------------


def _alias_levels(levels: int, width: int) -> str:
    """`levels` anchors, each a list of `width` aliases of the one before: width**levels."""
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\ncannbuild: {}\n"


CONFIG_BOMBS: Dict[str, Callable[[], str]] = {
    # the finding: 9 levels of 9 aliases, 9**10 nodes in 400 bytes (hung, 2.8 GB, MemoryError)
    "alias-bomb.yaml": lambda: _alias_levels(9, 9),
    # 100 aliases pass the alias count, but 2 per level for 50 levels are 2**51 nodes
    "doubling-aliases.yaml": lambda: _alias_levels(50, 2),
    # more aliases than any config needs, each harmless alone
    "many-aliases.yml": lambda: "x: &x 1\nl: [" + ", ".join(["*x"] * 101) + "]\n",
    # an alias inside the node it names: invoke's merge would recurse forever
    "loop.yaml": lambda: "a: &a {b: *a}\ncannbuild: {}\n",
    # nested flow collections: the composer and invoke's merge recurse per level
    "deep.yaml": lambda: "a: " + "[" * 300 + "]" * 300 + "\ncannbuild: {}\n",
    "deep-maps.yaml": lambda: "a: " + "{b: " * 200 + "1" + "}" * 200 + "\ncannbuild: {}\n",
    # the parser's scanner is quadratic in flow depth: the walk stops at the bound
    "very-deep.yaml": lambda: "a: " + "[" * 100_000 + "]" * 100_000 + "\n",
    # json.load reads 600 levels; invoke's merge then was a RecursionError traceback
    "deep.json": lambda: '{"a": ' * 600 + "1" + "}" * 600,
}


@pytest.mark.parametrize("name", sorted(CONFIG_BOMBS))
def test_a_config_bomb_is_refused_naming_the_file_in_bounded_memory(name, tmp_path):
    """Each was a hang, a MemoryError or a RecursionError traceback, or loaded whole
    (deep.yaml, deep-maps.yaml); very-deep.yaml guards the walk stopping at the bound."""
    (tmp_path / name).write_text(CONFIG_BOMBS[name]())
    proc = cannbuild("--config", name, "status", "-w", "ws",
        cwd=tmp_path, timeout=HANG_GUARD, memory_cap=MEMORY_CAP,
    )  # fmt: skip
    refused_once(proc, f"--config {name}")


def test_an_alias_bomb_in_the_project_invoke_yaml_is_refused(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "invoke.yaml").write_text(_alias_levels(9, 9))
    proc = subprocess.run(
        [sys.executable, "-m", "cannbuild", "status", "-w", str(tmp_path / "ws")],
        cwd=project, env=clean_env(), capture_output=True, text=True,
        timeout=HANG_GUARD, preexec_fn=functools.partial(cap_memory, MEMORY_CAP),
    )  # fmt: skip
    # under the cap a MemoryError was caught and worded as unreadable: the bound is named
    refused_once(proc, str(project / "invoke.yaml"), "aliases expanded")


@pytest.mark.parametrize(
    "name, text",
    [
        ("shared.yaml", "base: &j 3\ncannbuild:\n  jobs: *j\n  soc: &s A2\nother: [*s, *s]\n"),
        ("nested.json", '{"cannbuild": {"jobs": 3}, "x": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}'),
    ],
)
def test_a_config_with_a_few_aliases_or_brackets_in_strings_is_still_read(name, text, tmp_path):
    (tmp_path / name).write_text(text)
    proc = cannbuild("--config", name, "status", "-w", "ws", cwd=tmp_path, timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "name, text, named",
    [
        ("twice.yaml", "cannbuild:\n  soc: bogus\n  soc: A3\n", "'soc' twice (lines 2 and 3)"),
        ("sections.yaml", "cannbuild:\n  soc: A3\ncannbuild:\n  jobs: 3\n", "'cannbuild' twice"),
        ("twice.json", '{"cannbuild": {"soc": "A3"}, "cannbuild": {}}', "'cannbuild' twice"),
    ],
)
def test_a_key_set_twice_in_a_config_is_refused_naming_it(name, text, named, tmp_path):
    """invoke's loader keeps the last value without a word: `soc: A3` under a second
    `cannbuild:` would silently drop every key of the first."""
    (tmp_path / name).write_text(text)
    proc = cannbuild("--config", name, "status", "-w", "ws", cwd=tmp_path, timeout=HANG_GUARD)
    refused_once(proc, name, named)


# --- TOML nested past the parser's recursion ----------------------------------------------

DEEP_TOML = {
    "arrays": "a = " + "[" * 100_000 + "]" * 100_000 + "\n",
    "inline-tables": "a = " + "{x = " * 100_000 + "1" + "}" * 100_000 + "\n",
}
TOML_READERS = {
    "recipe": (["lock", "--cann", "9.0.0", "--soc", "A2", "--recipe", "deep.toml"], "recipe"),
    "lock": (["status", "--lock-file", "deep.toml"], "lock file"),
    "variants": (["bench", "--variants", "deep.toml"], "--variants"),
}


@pytest.mark.parametrize("reader", sorted(TOML_READERS))
@pytest.mark.parametrize("shape", sorted(DEEP_TOML))
def test_deeply_nested_toml_is_refused_naming_the_file(reader, shape, tmp_path):
    (tmp_path / "deep.toml").write_text(DEEP_TOML[shape])
    args, what = TOML_READERS[reader]
    proc = cannbuild(*args, "-w", "ws", cwd=tmp_path, timeout=HANG_GUARD)
    refused_once(proc, what, "deep.toml", "nested too deeply")


# --- secrets known by a word of their name ------------------------------------------------


@pytest.mark.parametrize(
    "name, secret",
    [
        ("API_KEY_ID", True),  # an AWS key id is half a credential
        ("AWS_ACCESS_KEY_ID", True),
        ("KEY_FILE", True),
        ("PRIVATE_KEY_PEM", True),
        ("privateKey", True),
        ("NPM_AUTH", True),
        ("AUTH_TOKEN", True),
        ("Authorization", True),
        ("OAUTH_CLIENT", True),
        ("PASS", True),
        ("DB_PASS", True),
        ("SSHPASS", True),
        ("MYSQL_PWD", True),
        ("SESSION_COOKIE", True),
        ("CREDENTIALS_JSON", True),
        ("PASSTHROUGH", False),
        ("BYPASS", False),
        ("COMPASS_DIR", False),
        ("AUTHOR", False),
        ("AUTHOR_NAME", False),
        ("KEYBOARD", False),
        ("MONKEY", False),
        ("PWD", False),
        ("OLDPWD", False),
        ("SESSION_MANAGER", False),
        ("PRIVATEER", False),
        ("GIT_CONFIG_KEY_0", False),  # names url.<mirror>.insteadOf; its text is redacted
        ("GIT_CONFIG_VALUE_0", False),
    ],
)
def test_a_secret_is_known_by_a_word_of_its_name(name, secret):
    assert secret_name(name) is secret


@pytest.mark.parametrize(
    "text, hidden",
    [
        ("export API_KEY_ID=AKIA0123456789", "AKIA0123456789"),
        ("NPM_AUTH: bnBtOnNlY3JldA==", "bnBtOnNlY3JldA=="),
        ("DB_PASS=hunter2hunter2 make", "hunter2hunter2"),
        ("https://x/y?key=k3yk3y&z=1", "k3yk3y"),
        ("Authorization: s3cr3tvalue", "s3cr3tvalue"),
        ("Authorization: Bearer abc.def.ghi", "abc.def.ghi"),
        ("https://mirror.example/x.git?private_key=pk123", "pk123"),
    ],
)
def test_a_secret_named_in_text_is_redacted(text, hidden):
    out = redact(text)
    assert hidden not in out and "***" in out, out


@pytest.mark.parametrize(
    "plain",
    [
        "Known keys: cann_path, sysroot, workspace.",
        "key: value",
        "author: Alice",
        "PASSTHROUGH=1 BYPASS=yes",
        "https://gitcode.com:443/cann/opbase.git",
    ],
)
def test_text_with_no_secret_name_is_left_alone(plain):
    assert redact(plain) == plain


SECRETS = {
    "API_KEY_ID": "AKIAsecretkeyid01",
    "PRIVATE_KEY_PEM": "pem-secret-body-02",
    "NPM_AUTH": "npm-secret-auth-03",
    "PASS": "plain-secret-pass-04",
    "Authorization": "Bearer bearer-secret-05",
}


def secret_recipe(folder: Path) -> Path:
    (folder / "steps").mkdir(parents=True, exist_ok=True)
    (folder / "steps" / "build.j2").write_text('bash -c "true"\n')
    env = ", ".join(f"{k} = {json.dumps(v)}" for k, v in SECRETS.items())
    path = folder / "tiny.toml"
    path.write_text(tiny_recipe(f'{env}, CC = "gcc"'))
    return path


def leaked(text: str) -> List[str]:
    return [v for v in SECRETS.values() if v in text or v.split()[-1] in text]


def test_secrets_by_name_are_hidden_in_plan_json(tree, tmp_path):
    tree.toolkit_cann("8.5.0")
    recipe = secret_recipe(tmp_path / "recipes")
    proc = cannbuild("plan", "--json", "--sysroot", str(tree.root), "--soc", "ascend910b",
        "--recipe", str(recipe), cwd=tmp_path, timeout=HANG_GUARD,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert leaked(proc.stdout + proc.stderr) == []
    env = json.loads(proc.stdout)["steps"][0]["env"]
    assert {k: env[k] for k in SECRETS} == {k: "***" for k in SECRETS}
    assert env["CC"] == "gcc"


def test_secrets_by_name_are_hidden_in_the_step_log_and_the_stamp(tmp_path):

    ws = Workspace(root=tmp_path / "ws")
    step = build_step(secret_recipe(tmp_path / "recipes"), ws)
    outcome = run_alone(step, ws, tmp_path / "toolkit")
    log = outcome.log.read_text()
    assert outcome.exit_code == 0, log
    assert "# env: API_KEY_ID=***\n" in log and "# env: NPM_AUTH=***\n" in log
    assert leaked(log) == []
    assert leaked((ws.stamps / "build.json").read_text()) == []


def test_a_mirror_password_in_an_error_paragraph_is_redacted(tmp_path):
    """An invalid mirror rule quotes the URL it was given: with its password redacted."""
    (tmp_path / "ci.yaml").write_text(
        "cannbuild:\n  mirrors:\n    'https://bob:mirr0rs3cr3t@git.example.com/': ''\n"
    )
    proc = cannbuild("--config", "ci.yaml", "lock", "--cann", "9.0.0", "--soc", "A2", "-w", "ws",
        cwd=tmp_path, timeout=HANG_GUARD,
    )  # fmt: skip
    refused_once(proc, "mirrors", "https://***@git.example.com/")
    assert "mirr0rs3cr3t" not in proc.stdout + proc.stderr


# --- option values: --jobs, --soc, --ops ----------------------------------------------------


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--jobs", "99999999999999999999999"),
        ("--jobs", "4097"),
        ("--jobs", "0"),
        ("--soc", "A2\n"),
        ("--soc", "A2\t"),
        ("--ops", ""),
        ("--ops", "flash_attention_score,,"),
        ("--ops", "flash_attention_score\n"),
    ],
    ids=["jobs-huge", "jobs-4097", "jobs-0", "soc-newline", "soc-tab", "ops-empty",
         "ops-empty-names", "ops-newline"],
)  # fmt: skip
def test_an_out_of_range_or_control_character_value_is_refused_naming_the_flag(
    flag, value, tmp_path
):
    soc = [] if flag == "--soc" else ["--soc", "A2"]
    proc = cannbuild("lock", "--cann", "9.0.0", *soc, flag, value, "-w", "ws",
        cwd=tmp_path, timeout=HANG_GUARD,
    )  # fmt: skip
    refused_once(proc, flag)


def test_a_state_file_read_from_two_modules_is_said_once(tmp_path, capsys):
    """`status` over a corrupt stamp said its warning twice: Python's "once" is once per
    module that warns (housekeeping and build.stamps both read the stamp)."""
    path = tmp_path / "opbase-build.json"
    path.write_text('{"broken')
    with state_warnings():
        for module in ("cannbuild.housekeeping", "cannbuild.build.stamps", "cannbuild.locks"):
            scope = {"__name__": module, "read_state": read_state, "STAMP": STAMP, "path": path}
            exec("read_state(path, STAMP)", scope)
    said = capsys.readouterr().err
    assert said.count(f"step stamp {path} is not valid JSON") == 1, said
