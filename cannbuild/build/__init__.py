"""The step engine: a session (host, recipe, context), its plan, and the steps run from it.

Layering, top to bottom: `session` opens a run and checks the recipe's requirements
(`requirements`); `steps` makes the plan for a session (`plan`) and runs it through `runner`,
which wraps each command in its `actions`, writes `stamps` after success, and leaves the toolkit
alone through the `overlay` (or backs it up first, `toolkit_backup`). `compile_cache` and
`reproducible` add the shared ccache and SOURCE_DATE_EPOCH to a step's environment.
`cannbuild.transaction` sits above this package: the lock, the sources, the steps, validation.
"""
