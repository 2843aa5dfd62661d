"""Run every bench present: each module of this package that defines ``main()``."""

import importlib
import pkgutil

import bench

for module_info in pkgutil.iter_modules(bench.__path__):
    if module_info.name.startswith("_"):
        continue
    module = importlib.import_module(f"bench.{module_info.name}")
    if callable(getattr(module, "main", None)):
        module.main()
