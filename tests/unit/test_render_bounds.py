"""What one render may cost (issues 25 and 39): a render that runs away is stopped at its
CPU deadline, one that asks for too much memory when it asks, and what it hands back is
capped (cannbuild/render/sandbox.py).

Each hostile template renders in a child process capped at 1 GiB of address space with a
timeout, so a bound that no longer holds fails the test (MemoryError, a traceback or the
timeout) instead of taking the machine's memory or hanging the suite.  A runaway meets a
lowered CPU deadline (tinyrecipe.deadline_for); the default is pinned by
test_the_render_deadline_is_half_a_second_and_the_environment_only_lowers_it."""

from __future__ import annotations

import json

import pytest
from warmcli import python_c

from cannbuild.errors import UsageError
from cannbuild.render.sandbox import RENDER_CPU_ENV
from cannbuild.render.templates import render_value

from clirun import cannbuild
from tinyrecipe import deadline_for, tiny_recipe

CAP = 1 << 30  # bytes of address space the child may map
HOSTILE_RUN = 30  # seconds: each case is refused in well under one; unbounded, minutes

CHILD = """
import sys
from cannbuild.errors import UsageError
from cannbuild.render.templates import render_value
try:
    render_value(sys.argv[1], {"soc": "ascend910b", "jobs": 8}, "[repos.lib] tag")
except UsageError as exc:
    print(exc.message)
    sys.exit(2)
"""


@pytest.mark.parametrize(
    "template, bound",
    [
        # nested loops over a long string / a list: were a CPU hang, killed at 60 s
        (
            "{% set s = 'a'*100000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}",
            "RENDER_CPU_SECONDS",
        ),
        (
            "{% set r = range(9000)|list %}{% for a in r %}{% for b in r %}{% endfor %}"
            "{% endfor %}",
            "RENDER_CPU_SECONDS",
        ),
        # a recursive loop's inner passes (`loop(s)`) count too
        (
            "{% set s = 'a'*100000 %}{% for a in range(5000)|list recursive %}"
            "{% if a is number %}{{ loop(s) }}{% endif %}{% endfor %}",
            "RENDER_CPU_SECONDS",
        ),
        # a loop over a filter's generator, counted as it is consumed
        (
            "{% set r = range(9000)|list %}{% for a in r %}{% for b in r|select %}{% endfor %}"
            "{% endfor %}",
            "RENDER_CPU_SECONDS",
        ),
        # filters that walk their input, in a loop
        ("{% set r = range(90000)|list %}{% for i in r %}{{ r|sum }}{% endfor %}", "RENDER_CPU_SECONDS"),
        # sizes set by a filter's arguments: tojson(indent) was 32 s and 4.8 GB
        ("{{ {'a': 1}|tojson(indent=999999999) }}", "RENDER_MEMORY_BYTES"),
        ("{{ range(9000)|list|tojson(indent='x' * 200000) }}", "RENDER_MEMORY_BYTES"),
        ("{{ ('a ' * 20000)|wordwrap(1, wrapstring='x' * 100000) }}", "RENDER_MEMORY_BYTES"),
        # urlize's target repeated in every link (nine links, 900 KB, in milliseconds: a
        # text of 40000 bare `a.com` words was as long but took its CPU deadline on a
        # loaded host before its output met the cap)
        ("{{ ('http://a.com ' * 9)|urlize(target='t' * 100000) }}", "MAX_VALUE_CHARS"),
        # each item within the bounds, ten thousand of them: was a 2.5 GB peak
        ("{{ range(10000)|map('string')|map('center', 260000)|list }}", "RENDER_MEMORY_BYTES"),
        # a string built and dropped millions of times (a constant `'x' * 200000` is built
        # once, when Jinja compiles it: 9000 passes of that are 2 ms, no threat)
        ("{% for i in range(90000) %}{% for j in range(100) %}{% set x = 'x' * (200000 + j) %}"
         "{% endfor %}{% endfor %}", "RENDER_CPU_SECONDS"),
        # a filter or method that scans a long string, over and over
        (
            "{% set s = 'a ' * 100000 %}{% for i in range(9000) %}{{ s|wordcount }}{% endfor %}",
            "RENDER_CPU_SECONDS",
        ),
        ("{% set s = 'a' * 250000 %}{% for i in range(90000) %}{{ s.count('b') }}{% endfor %}",
         "RENDER_CPU_SECONDS"),
        # `~` joined unchecked: five of these built 125 MB, six 625 MB (one, 1 MB, is no threat)
        ("{% set a = 'x' * 200000 %}{% set b = a ~ a ~ a ~ a ~ a %}{% set c = b ~ b ~ b ~ b ~ b %}"
         "{% set d = c ~ c ~ c ~ c ~ c %}{% set e = d ~ d ~ d ~ d ~ d %}{{ e|length }}",
         "RENDER_MEMORY_BYTES"),
    ],
    ids=[
        "string-loops",
        "list-loops",
        "recursive-loop",
        "generator-loop",
        "sum-in-loop",
        "tojson-indent",
        "tojson-indent-string",
        "wordwrap",
        "urlize",
        "map-center",
        "repeat-in-loop",
        "wordcount-in-loop",
        "count-in-loop",
        "concat",
    ],
)  # fmt: skip
def test_a_render_past_its_budget_is_refused_fast_naming_the_bound(template, bound, monkeypatch):
    for name, value in deadline_for(bound).items():
        monkeypatch.setenv(name, value)
    proc = python_c(CHILD, template, timeout=HOSTILE_RUN, memory_cap=CAP)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out, out
    assert "[repos.lib] tag" in out and bound in out, out


@pytest.mark.parametrize(
    "value, bound",
    [
        (
            "{% set s = 'a'*100000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}",
            "RENDER_CPU_SECONDS",
        ),
        ("{{ range(10000)|map('string')|map('center',260000)|list }}", "RENDER_MEMORY_BYTES"),
        ("{{ {'a':1}|tojson(indent=999999999) }}", "RENDER_MEMORY_BYTES"),
        # 5,000 nested parentheses: a RecursionError traceback from Jinja's parser (issue 41)
        ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "nested deeper than Python recurses"),
        ("{{ " + "[" * 5000 + "]" * 5000 + " }}", "nested deeper than Python recurses"),
    ],
    ids=["nested-loops", "map-center", "tojson-indent", "nested-parens", "nested-lists"],
)
def test_a_recipe_value_past_the_render_budget_is_exit_2_within_a_memory_cap(
    tree, tmp_path, value, bound
):
    tree.toolkit_cann("8.5.0")
    (tmp_path / "steps").mkdir()
    (tmp_path / "steps" / "build.j2").write_text("bash build.sh --soc={{ soc }}\n")
    recipe = tmp_path / "tiny.toml"
    recipe.write_text(tiny_recipe(f"EXTRA = {json.dumps(value)}"))
    proc = cannbuild("plan", "--sysroot", str(tree.root), "--soc", "ascend910b", "--recipe", str(recipe),
        cwd=tmp_path,
        timeout=HOSTILE_RUN,
        memory_cap=CAP,
        **deadline_for(bound),
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out, out
    for needle in (str(recipe), "step 'build'", bound):
        assert needle in out, out


def test_the_render_deadline_is_half_a_second_and_the_environment_only_lowers_it(monkeypatch):
    runaway = "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}"
    where = "(RENDER_CPU_SECONDS in cannbuild/render/sandbox.py"
    monkeypatch.delenv(RENDER_CPU_ENV, raising=False)
    with pytest.raises(UsageError) as err:
        render_value(runaway, {}, "[repos.lib] tag")
    assert f"ran past its deadline of 0.5 s of CPU {where})" in err.value.message
    monkeypatch.setenv(RENDER_CPU_ENV, "0.05")
    with pytest.raises(UsageError) as err:
        render_value(runaway, {}, "[repos.lib] tag")
    assert f"of 0.05 s of CPU {where}, lowered by {RENDER_CPU_ENV})" in err.value.message
    for bad in ("0.6", "0", "soon"):  # never a higher deadline, nor none
        monkeypatch.setenv(RENDER_CPU_ENV, bad)
        with pytest.raises(UsageError) as err:
            render_value("{{ soc | upper }}", {"soc": "x"}, "[repos.lib] tag")
        assert err.value.message == (
            f"{RENDER_CPU_ENV}={bad!r} is not a render deadline: expected seconds of CPU above 0 "
            "and at most 0.5; unset it for the default"
        )


OPS = {"ops": ["flash_attention", "mla", "nsa"], "soc": "ascend910b", "deps": {"a": "1", "b": "2"}}


@pytest.mark.parametrize(
    "template",
    [
        "{% for op in ops %}{{ op }}{{ ',' if not loop.last }}{% endfor %}",
        "{% for op in ops|select('ne', 'mla') %}{{ loop.index }}/{{ loop.length }}:{{ op }} "
        "{% endfor %}",
        "{% for op in ops if op != 'nsa' %}{{ op|upper }}{% else %}none{% endfor %}",
        "{% for k, v in deps|dictsort %}{{ k ~ '=' ~ v }};{% endfor %}",
        "{% for x in [1, [2, [3]]] recursive %}({% if x is iterable %}{{ loop(x) }}"
        "{% else %}{{ x }}{% endif %}){% endfor %}",
        "{{ deps|tojson }}|{{ deps|tojson(indent=2) }}",
        "{{ ops|map('upper')|join('-') }} {{ ops|sort|reverse|list }} {{ [3, 1, 3]|unique|sum }}",
        "{{ 'some words to wrap' | wordwrap(6) }} {{ 'see https://x.invalid' | urlize }}",
        "{{ soc ~ '-' ~ ops|length ~ ops[0][:5] }} {{ ops|batch(2)|list }} {{ ops|groupby('0') }}",
    ],
)
def test_ordinary_templates_render_as_in_jinjas_own_sandbox(template):
    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    own = ImmutableSandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)
    assert render_value(template, OPS, "x") == own.from_string(template).render(**OPS)


def test_a_render_child_whose_parent_stopped_listening_exits_without_unwinding_the_run(
    tmp_path,
):
    """A signal that lands mid-render closes the child's pipe (RenderChild.__call__); its
    answer then meets a broken pipe.  The forked child must end there: unwinding instead
    ran the run's own cleanup (the workspace lock's release, its report) in the child and
    printed a second traceback beside the run's 'interrupted'."""
    import os
    import time

    from cannbuild.render.sandbox import RenderChild

    parent = os.getpid()
    unwound = tmp_path / "unwound"
    child = RenderChild(lambda _: time.sleep(0.2) or "rendered")
    try:
        pid, pipe = child._start()
    finally:
        if os.getpid() != parent:  # the child came back up through this frame
            unwound.write_text(str(os.getpid()))
            os._exit(0)
    pipe.send("request")
    pipe.close()  # the run was interrupted while the child renders
    os.waitpid(pid, 0)
    assert not unwound.exists()


def test_a_signal_while_the_render_child_forks_is_delivered_not_swallowed():
    """A SIGTERM that lands while os.fork runs Python's at-fork hooks (logging releases
    its lock there) was raised inside the hook, printed as 'Exception ignored' and lost:
    setup went on and exited 0.  It is now held and raised once the child is recorded."""
    import os
    import signal

    from cannbuild.errors import SignalInterrupt
    from cannbuild.render.sandbox import RenderChild, _stop

    armed = []
    os.register_at_fork(after_in_parent=lambda: armed and os.kill(os.getpid(), signal.SIGTERM))

    def handler(signum, _frame):
        raise SignalInterrupt(signum)

    old = signal.signal(signal.SIGTERM, handler)
    child = RenderChild(lambda _: "rendered")
    try:
        armed.append(True)
        with pytest.raises(SignalInterrupt):
            child(None, "the render")
    finally:
        armed.clear()
        signal.signal(signal.SIGTERM, old)
        _stop(child.__dict__)


def test_a_signal_the_run_ignores_does_not_end_its_render_child():
    """Under `nohup cannbuild setup` (SIGHUP ignored) the terminal's hangup reached the
    render child, which had set every signal back to its default: it died, and the run
    stopped with exit 2 blaming the step's template ('was ended by signal 1')."""
    import os
    import signal

    from cannbuild.render.sandbox import RenderChild, _stop

    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    child = RenderChild(lambda request: f"rendered {request}")
    try:
        assert child(1, "the render") == "rendered 1"
        assert child.child is not None
        os.kill(child.child[0], signal.SIGHUP)  # the terminal hangs up
        assert child(2, "the render") == "rendered 2"
    finally:
        signal.signal(signal.SIGHUP, old)
        _stop(child.__dict__)
