import shlex

import pytest

from cannbuild.errors import UsageError
from cannbuild.recipes import load_recipe
from cannbuild.redact import redact, redact_data
from cannbuild.render.templates import render_string
from cannbuild.resources import data_dir


def test_every_interpolated_value_is_shell_quoted():
    evil = "x; rm -rf / #"
    cmd = render_string(
        "bash build.sh --vendor_name={{ v }} -j{{ j }}", {"v": evil, "j": 8}, quote=True
    )
    assert shlex.split(cmd) == ["bash", "build.sh", f"--vendor_name={evil}", "-j8"]


def test_a_path_with_spaces_stays_one_argument():
    cmd = render_string(
        "bash {{ p }} --install-path={{ d }}", {"p": "/a b/x.run", "d": "/c d"}, quote=True
    )
    assert shlex.split(cmd) == ["bash", "/a b/x.run", "--install-path=/c d"]


def test_undefined_template_values_are_errors_not_empty_strings():
    import jinja2

    with pytest.raises(jinja2.UndefinedError):
        render_string("--soc={{ socc }}", {"soc": "ascend910b"}, quote=True)


def test_a_step_template_missing_a_value_names_the_recipe():
    from cannbuild.build.plan import render_command

    recipe = load_recipe(data_dir("recipes") / "8.5.toml")
    with pytest.raises(UsageError) as err:
        render_command(
            recipe, "steps/opbase-build.j2", {"jobs": 2, "third_party": {}}, "step 'opbase-build'"
        )
    assert "8.5.toml" in err.value.paragraph() and "pkg_flag" in err.value.paragraph()


@pytest.mark.parametrize(
    "text,hidden",
    [
        ("git fetch https://alice:s3cret@mirror.example/cann/opbase.git", "s3cret"),
        (
            "url = 'https://oauth2:glpat-abcdefghijklmnop@gitlab.example/x.git'",
            "glpat-abcdefghijklmnop",
        ),
        ("curl -H 'Authorization: Bearer abc.def.ghi' https://x", "abc.def.ghi"),
        ("https://x/y?private_token=tok123&z=1", "tok123"),
        ("token ghp_0123456789abcdefghij in the log", "ghp_0123456789abcdefghij"),
        # each shape alone: none of them may hide behind another's tell-tale character
        ("github_pat_11ABCDEFG0123456789_abcdef", "github_pat_11ABCDEFG0123456789_abcdef"),
        ("glpat-abcdefghijklmnop", "glpat-abcdefghijklmnop"),
        ("export GITLAB_TOKEN=tok456", "tok456"),
        ("db_password: hunter2", "hunter2"),
        ("ssh://deploy:key789@host/repo.git", "key789"),
        ('GITHUB_TOKEN="ghtok-quoted"', "ghtok-quoted"),
        ('password: "hunter2-yaml"', "hunter2-yaml"),
        ('config: {"password": "hunter2-json"}', "hunter2-json"),
        ("export DB_PASSWORD='s3 cret'", "cret"),
        ("docker login -u bob --password hunter2", "hunter2"),
        ('curl --api-key "k 1" https://x', "k 1"),
        # a quote that does not close on the line: masked to its end
        ('export GITHUB_TOKEN="ghtok open', "ghtok open"),
        ('{"password": "hunter2-cut', "hunter2-cut"),
        ('TOKEN=\'abc PASSWORD="s3cret"', "abc"),
    ],
)
def test_credentials_are_redacted(text, hidden):
    out = redact(text)
    assert hidden not in out and "***" in out


def test_redaction_keeps_plain_urls_and_walks_data():
    assert redact("https://gitcode.com/cann/opbase.git") == "https://gitcode.com/cann/opbase.git"
    data = redact_data({"a": ["https://u:p@h/x"], "b": 1})
    assert data == {"a": ["https://***@h/x"], "b": 1}


def test_a_cached_template_renders_as_compiled_and_a_changed_one_is_recompiled(tmp_path):
    from cannbuild.render.templates import file_env

    templates, cache = tmp_path / "t", tmp_path / "cache"
    templates.mkdir()
    (templates / "r.j2").write_text("status {{ s }}\n")
    first = file_env(templates, cache).get_template("r.j2").render(s="PASS")
    assert first == "status PASS\n" and list(cache.iterdir())
    # a fresh environment (a later run) takes the compiled code from the cache ...
    assert file_env(templates, cache).get_template("r.j2").render(s="FAIL") == "status FAIL\n"
    # ... but never for a template that changed since
    (templates / "r.j2").write_text("verdict {{ s }}\n")
    assert file_env(templates, cache).get_template("r.j2").render(s="PASS") == "verdict PASS\n"


@pytest.mark.parametrize("text", ["v8.5.0", "build_out/*.run", "a }} b", "50% {x}"])
def test_a_value_without_template_syntax_renders_as_itself(text):
    from cannbuild.render.templates import render_value

    assert render_value(text, {}, "tag") == text


def test_a_template_cache_that_cannot_be_written_only_costs_a_compile(tmp_path):
    import shutil

    from cannbuild.render.templates import file_env

    templates, cache = tmp_path / "t", tmp_path / "cache"
    templates.mkdir()
    (templates / "r.j2").write_text("status {{ s }}\n")
    env = file_env(templates, cache)
    shutil.rmtree(cache)  # gone (cleaned, or a full disk): writing the cache fails
    assert env.get_template("r.j2").render(s="OK") == "status OK\n"
