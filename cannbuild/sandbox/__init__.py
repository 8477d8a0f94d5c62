"""The emulated Ascend host: a toolkit tree, NPUs, a driver and stand-in repositories."""

from .create import CreateResult, create_sandbox, plan_sandbox, resolve_spec
from .spec import SandboxInfo, SandboxSpec, load_info

__all__ = [
    "CreateResult",
    "SandboxInfo",
    "SandboxSpec",
    "create_sandbox",
    "load_info",
    "plan_sandbox",
    "resolve_spec",
]
