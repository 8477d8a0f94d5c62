"""The command line: tasks grouped by what they act on, each parsing its options, calling
the core and rendering what it returns.

host (doctor, sandbox), build (plan, fetch, lock, build, install, setup, bundle, clean,
status), validate, container (container, container-run, ci), analyze (profile, diagnose).  Every option is declared
once, in `_flags.FLAGS`.
"""

from invoke import Collection

from . import analyze, build, container, host, validate

ns = Collection()
for _group in (host, build, validate, container, analyze):
    for _name, _task in _group.collection.tasks.items():
        ns.add_task(_task, _name)

__all__ = ["ns"]
