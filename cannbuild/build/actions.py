"""What a step's `action` adds around its command: a small registry, one class per action.

- `overlay` (opbase's installer): the installer writes into a fresh staging prefix,
  and the toolkit overlay is rebuilt from it afterwards (the plan runs the steps after
  it under the overlay's environment: plan.switches_to_overlay).  With --install-into-toolkit the installer writes into the
  toolkit itself, after the files it will replace are kept (toolkit_backup.py).
- `vendor` (the custom package's installer): it installs into a clean vendor folder (its
  repo's, `<vendor_name>_<vendor_suffix>`) and must leave the package's bin/set_env.bash
  there.

`prepare` runs before the command, `finish` after it succeeded; each returns the notes
to log, and `finish` the paths the step needs to stay up to date.  A failure raises
ActionFailed with what to tell the user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Mapping, Optional, Protocol, Tuple

from msgspec import Struct

from .. import safefs
from .overlay import build_overlay, expose_op_common, staged_root
from .plan import PlannedStep
from .toolkit_backup import back_up_toolkit


class ActionContext(Struct, frozen=True, kw_only=True):
    """Where the toolkit, the stage, the overlay and the vendor folder are."""

    toolkit_home: Path
    overlay: Path
    stage: Path
    opp: Path
    vendor_dirs: Mapping[str, Path]  # repo -> the folder its package installs into
    overlay_enabled: bool = True
    opbase_headers: str = "pkg_inc"  # where ops-transformer looks for op_common (recipe)
    arch: str = ""
    # --install-into-toolkit: the toolkit the installer writes into, and where the files
    # it replaces are kept
    toolkit_target: Optional[Path] = None
    toolkit_backup: Optional[Path] = None

    def vendor_dir(self, step: PlannedStep) -> Path:
        """The vendor folder `step` (a package installer) installs into: its repo's."""
        found = self.vendor_dirs.get(step.owner or "")
        if found is None:
            raise ActionFailed(
                f"step {step.name} installs a package, but its repo "
                f"({step.owner or 'none'}) has no vendor folder (no vendor_suffix in the recipe)",
                "Give the repo a vendor_suffix in the recipe ([repos.X] vendor_suffix).",
            )
        return found

    @property
    def root(self) -> Path:
        """The workspace that holds the stage, the overlay and opp: nothing below it is
        removed or made through a link (safefs)."""
        return self.opp.parent


class ActionFailed(Exception):
    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class Action(Protocol):
    def prepare(self, step: PlannedStep, ctx: ActionContext, run_id: str) -> List[str]: ...

    def finish(self, step: PlannedStep, ctx: ActionContext) -> Tuple[List[str], List[str]]:
        """(notes, paths the step needs to stay up to date)"""
        ...


class OverlayAction:
    def prepare(self, step: PlannedStep, ctx: ActionContext, run_id: str) -> List[str]:
        if ctx.overlay_enabled:
            # the installer writes here: a link at the stage is refused, never followed
            safefs.fresh(ctx.root, ctx.stage, f"{step.name}'s staging prefix")
            return []
        if ctx.toolkit_target is None or ctx.toolkit_backup is None:
            return []
        try:
            backup, written, replaced = back_up_toolkit(
                step, ctx.toolkit_target, ctx.toolkit_backup / run_id, run_id, ctx.root
            )
        except OSError as exc:
            raise ActionFailed(
                str(exc),
                "Nothing was written to the toolkit. Fix the installer error, or drop "
                "--install-into-toolkit to use the workspace overlay.",
            ) from None
        return [
            f"--install-into-toolkit: {step.name} writes {written} files into "
            f"{ctx.toolkit_target} ({replaced} replace existing ones, kept in {backup}/files); "
            f"to undo it: bash {backup}/restore.sh"
        ]

    def finish(self, step: PlannedStep, ctx: ActionContext) -> Tuple[List[str], List[str]]:
        if not ctx.overlay_enabled:
            return [], []
        try:
            root = staged_root(ctx.stage)
            exposed = expose_op_common(root, ctx.arch, ctx.opbase_headers)
            count = build_overlay(ctx.toolkit_home, root, ctx.overlay, ctx.root)
        except OSError as exc:
            raise ActionFailed(str(exc), "See the log for the first error.") from None
        notes = [exposed] if exposed else []
        notes.append(
            f"overlaid {count} staged files from {root} on {ctx.toolkit_home} at {ctx.overlay}"
        )
        return notes, [str(ctx.overlay)]


class VendorAction:
    def prepare(self, step: PlannedStep, ctx: ActionContext, run_id: str) -> List[str]:
        # the installer writes into opp: its folders are checked (made) link-free first
        what = f"{step.name}'s vendor folder"
        vendor = ctx.vendor_dir(step)
        safefs.remove(ctx.root, vendor, what, ignore_errors=True)
        safefs.make_dirs(ctx.root, ctx.opp, what)
        safefs.check_below(ctx.root, vendor, what)
        return []

    def finish(self, step: PlannedStep, ctx: ActionContext) -> Tuple[List[str], List[str]]:
        set_env = ctx.vendor_dir(step) / "bin" / "set_env.bash"
        if not set_env.is_file():
            raise ActionFailed(
                f"the install finished but {set_env} is missing", "See the log for the first error."
            )
        return [], [str(set_env)]


ACTIONS: Dict[str, Action] = {"overlay": OverlayAction(), "vendor": VendorAction()}


def action_of(step: PlannedStep) -> Optional[Action]:
    return ACTIONS.get(step.spec.action) if step.spec.action else None
