"""cannbuild.lazy: a module declared at the top is imported by the first attribute read,
once, and reads and writes through the declaration reach the real module."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from cannbuild.lazy import lazy_module


def _module(tmp_path, monkeypatch, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_the_module_is_imported_by_the_first_attribute_read(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "lazy_target_a", "VALUE = 41\n")
    proxy = lazy_module("lazy_target_a")
    assert "lazy_target_a" not in sys.modules
    assert "not imported yet" in repr(proxy)
    assert proxy.VALUE == 41
    real = sys.modules["lazy_target_a"]
    real.VALUE = 42  # set on the module: seen through the declaration
    assert proxy.VALUE == 42
    proxy.VALUE = 43  # set through the declaration: on the module
    assert real.VALUE == 43
    del proxy.VALUE  # and deleted there
    assert not hasattr(real, "VALUE")


def test_threads_that_race_import_the_module_once(tmp_path, monkeypatch):
    """Every thread gets the one module, whose body ran once, however the reads interleave."""
    body = "import builtins\nbuiltins.lazy_target_runs = getattr(builtins, 'lazy_target_runs', 0) + 1\n"
    _module(tmp_path, monkeypatch, "lazy_target_b", body + "VALUE = object()\n")
    import builtins

    monkeypatch.setattr(builtins, "lazy_target_runs", 0, raising=False)
    proxy = lazy_module("lazy_target_b")
    start = threading.Barrier(8)
    seen = []

    def read() -> None:
        start.wait()
        seen.append(proxy.VALUE)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builtins.lazy_target_runs == 1
    assert len(seen) == 8 and all(v is sys.modules["lazy_target_b"].VALUE for v in seen)


def test_a_missing_module_fails_at_the_read_not_at_the_declaration():
    proxy = lazy_module("cannbuild_no_such_module")
    with pytest.raises(ModuleNotFoundError) as info:
        _ = proxy.anything
    assert info.value.name == "cannbuild_no_such_module"


def test_the_import_is_reported_by_python_x_importtime():
    """A no-op run's test reads `python -X importtime` to see what was loaded: an import
    made through a declaration is reported there like an `import` statement's."""
    code = (
        "from cannbuild.lazy import lazy_module\nlazy_module('cannbuild.transaction').RunRequest\n"
    )
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = {
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "cannbuild.transaction" in loaded
