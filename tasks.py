"""`invoke TASK` in a checkout: the same tasks the `cannbuild` script runs."""

from cannbuild.tasks._invoke import namespace

ns = namespace()
