"""Cannbuild's Jinja: the template environments (`templates`), the sandbox every template
renders in (`sandbox`) and its bounds (`bounds`), and the grammars of values that reach a
rendered Dockerfile or workflow (`grammars`)."""
