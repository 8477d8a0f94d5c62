"""cannbuild's tasks for `invoke TASK` in a checkout, as the `cannbuild` script runs them.

The same tasks, options, help and exit codes: invoke's command line is handed to
cannbuild's parser (see cannbuild/tasks/_invoke.py)."""

from cannbuild.tasks._invoke import namespace, take_over

take_over(__file__)
ns = namespace()
