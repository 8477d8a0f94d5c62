"""A new CANN train as data: draft its recipe from the repositories at a ref
(`draft.py`), and check the flags a recipe renders against each repository's own
build.sh (`check.py`).  Above `build/` and `sources/`: it renders with the plan walk
and reads the repositories through the same fetch machinery (cannbuild.mirrors)."""
