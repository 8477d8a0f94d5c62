"""cannbuild's tasks for `invoke TASK` in a checkout: invoke's command line is handed to
the program the `cannbuild` script runs (cannbuild/cli.py), so both routes are one."""

from cannbuild.cli import namespace, take_over

take_over(__file__)
ns = namespace()
