"""Put this folder on PYTHONPATH to run cannbuild as on a host without torch: every
`import torch` fails as it does when the package is not installed."""

import sys


class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoTorch())
