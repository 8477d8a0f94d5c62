"""`invoke TASK` in a checkout: the same tasks, options and exit codes the `cannbuild`
script has (invoke's command line is handed to cannbuild's parser; see tasks/_invoke.py)."""

from cannbuild.tasks._invoke import namespace, take_over

take_over(__file__)
ns = namespace()
