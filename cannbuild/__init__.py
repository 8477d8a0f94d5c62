"""cannbuild: build, install and validate CANN operator repositories."""

__version__ = "0.1.0"
