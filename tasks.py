"""`invoke --list` in a checkout: the same collection the `cannbuild` script runs."""

from cannbuild.tasks import ns  # noqa: F401
