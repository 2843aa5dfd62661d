"""A single upsert of each kind into the file layer, this tree beside a baseline tree, in one run
(issue 10: <= 10 ms at 100k; a pattern or gotcha write re-rendered its group's whole view).

    python -m bench.view_upserts BASELINE_TREE [SIZE ...]      (default: 1000 10000 100000)

Per size, the home ``bench.open_search`` caches (``$DUALMEM_BENCH_CACHE``/SIZE/home/files) is
copied once per tree, opened by a fresh process running that tree's code (an index of another
schema is rebuilt then, before the clock), and 20 upserts of each kind are timed there: median
wall and CPU ms. The machine may be shared: read CPU when the load average is above the cores.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.file_layer import KINDS

# The baseline tree's own ``single_upserts`` runs in the child, so both trees time the same loop.
_CHILD = """
import asyncio, json, sys
from pathlib import Path
from bench.open_search import single_upserts

async def main(root, kinds):
    print(json.dumps({kind: await single_upserts(Path(root), kind) for kind in kinds}))

asyncio.run(main(sys.argv[1], sys.argv[2:]))
"""


def measure(tree: Path, files: Path) -> dict[str, list[float]]:
    """Median wall and CPU ms per kind, ``tree``'s code on a copy of ``files``."""
    with tempfile.TemporaryDirectory(prefix="dualmem-view-upserts-", dir=files.parent) as tmp:
        copy = Path(tmp) / "files"
        shutil.copytree(files, copy, symlinks=True)
        # -P: without it ``-c`` puts the working folder (this tree) before ``PYTHONPATH``
        run = subprocess.run([sys.executable, "-P", "-c", _CHILD, str(copy), *KINDS],
                             env={**os.environ, "PYTHONPATH": str(tree)},
                             capture_output=True, check=True, text=True)
    result: dict[str, list[float]] = json.loads(run.stdout)
    return result


def main(baseline: Path, sizes: list[int]) -> None:
    cache = Path(os.environ.get("DUALMEM_BENCH_CACHE")
                 or Path(tempfile.gettempdir()) / "dualmem-open-search")
    here = Path(__file__).resolve().parents[1]
    for size in sizes:
        files = cache / str(size) / "home" / "files"
        before, after = measure(baseline, files), measure(here, files)
        print(f"\n{size} episodes, load {os.getloadavg()[0]:.1f}; ms wall/CPU, median of 20")
        print(f"{'single upsert, file layer':<32}{'baseline':>14}{'this tree':>14}")
        for kind in KINDS:
            print(f"{kind:<32}{before[kind][0]:>8.1f}/{before[kind][1]:<5.1f}"
                  f"{after[kind][0]:>8.1f}/{after[kind][1]:<5.1f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), [int(size) for size in sys.argv[2:]] or [1000, 10000, 100000])
