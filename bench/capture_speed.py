"""Capture's speed: the first Stop on a transcript and the later ones, beside reading the file
alone, in the same run.

    python -m bench.capture_speed [--before TREE] [MB ...]      (default: 3 22; RUNS=5)

A transcript of MB megabytes shaped as Claude Code writes them (reads with file contents,
edits, test runs with their output, replies: ``tests/capture/shapes.py``). Measured, median of
RUNS, wall and CPU milliseconds:

- reading the file alone: its bytes, and each line parsed as JSON (what any reader pays);
- capture in-process on a new home (the file layer): the first Stop (the whole transcript), a
  later Stop after one more turn was appended, and a Stop with nothing new;
- ``dualmem hook stop`` as Claude Code runs it (``docs/claude-settings.json``): a whole process
  running the console script's code (``DUALMEM``), its bytecode cached as an installed
  package's is: first, later (written lean: ``memory.capture.later``), nothing
  new, a later Stop keeping a gotcha (a failure the turn fixed: appended too, its page rendered
  by the next open), a later Stop in a git repository (it asks git for the session's
  commits), beside ``python -c pass``; with
  ``--before TREE``, that checkout's Stop on the same transcript (e.g. main's, which read the
  whole transcript on every Stop).

Targets (issue 29): first Stop on 3 MB <= 1 s; later Stops <= 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

import orjson

from backends.protocol import MemoryBackend
from memory.capture.run import capture_transcript
from memory.store.project import ensure_project_id
from memory.store.selection import open_memory
from tests.capture.shapes import T0, Transcript

REPO = Path(__file__).resolve().parents[1]
FIRST_TARGET_MS = 1000.0
LATER_TARGET_MS = 100.0


PROJECT = "/PROJECT-FOLDER"
"""where the transcript's session ran: replaced by each home's project folder"""


def session(megabytes: float) -> bytes:
    """A working session of about ``megabytes``: turns of read, reply, edit, test run."""
    t = Transcript(PROJECT)
    t.prompt("Move the note store onto the journal and keep the tests green")
    n = 0
    while n % 50 or len(t.data()) < megabytes * 2**20:
        turn(t, n)
        n += 1
    return t.data()


def placed(data: bytes, folder: Path) -> bytes:
    return data.replace(PROJECT.encode(), str(folder).encode())


def turn(t: Transcript, n: int) -> None:
    path = f"src/notes/part{n % 60}.py"
    t.read(path, "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(120)))
    t.say(f"`part{n % 60}.py` keeps the notes of shard {n % 60}; its writes bypass the journal.")
    t.edit(path, "return x", "return journal.write(x)",
           said=f"Let me route shard {n % 60}'s writes through the journal.")
    failing = n % 7 == 3
    output = "".join(f"tests/test_part{i}.py ....\n" for i in range(40))
    if failing:
        t.bash("python -m pytest -q", output + f"E   AssertionError: shard {n % 60} lost a "
               "write\nFAILED tests/test_parts.py::test_shard - AssertionError\n"
               "1 failed, 159 passed in 2.1s", code=1)
    else:
        t.bash("python -m pytest -q", output + "160 passed in 2.0s")


def met_failure(t: Transcript, n: int) -> None:
    """A test run failing in a way the session had not met: the next turn's passing run fixes
    it, and the Stop after that keeps a gotcha (a kind with a view)."""
    t.bash("python -m pytest -q", f"E   KeyError: 'note {n}'\nFAILED tests/test_notes.py::"
           f"test_note_{n} - KeyError\n1 failed, 159 passed in 2.1s", code=1)


def _cpu_children() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(step: Callable[[], object]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    step()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def new_home(folder: Path) -> tuple[Path, str]:
    home = folder / ".dualmem"
    project, _ = ensure_project_id(home / "project.json", "bench")
    return home, project


async def capture_once(folder: Path, path: Path) -> None:
    home, project = new_home(folder)
    async with open_memory(home, "file") as store:
        async def given() -> MemoryBackend:
            return store

        await capture_transcript(home, project, path, given, root=folder)


def _capture_sync(folder: Path, path: Path) -> None:
    asyncio.run(capture_once(folder, path))


def read_alone(path: Path) -> None:
    for line in path.read_bytes().splitlines():
        orjson.loads(line)


def in_process(scratch: Path, data: bytes, runs: int) -> dict[str, list[tuple[float, float]]]:
    times: dict[str, list[tuple[float, float]]] = {}
    more = Transcript(PROJECT)
    for run in range(runs):
        folder = scratch / f"in-{run}"
        folder.mkdir()
        path = folder / "s.jsonl"
        path.write_bytes(placed(data, folder))
        times.setdefault("read the file alone", []).append(
            timed(functools.partial(read_alone, path)))
        capture = functools.partial(_capture_sync, folder, path)
        times.setdefault("capture: first Stop", []).append(timed(capture))
        more.lines = []
        turn(more, run)
        with path.open("ab") as handle:
            handle.write(placed(more.data(), folder))
        times.setdefault("capture: later Stop (one turn more)", []).append(timed(capture))
        times.setdefault("capture: Stop with nothing new", []).append(timed(capture))
    return times


DUALMEM = (sys.executable, "-c", "import sys; from memory.entry import main; sys.exit(main())")
"""``dualmem`` as Claude Code runs it: the console script (``[project.scripts]``) is this code.
Not ``python -m memory``, whose runpy (with importlib.util) costs a later Stop ~2.4M
instructions (~2 ms) that the hook never pays. The ``--before`` tree runs the same code."""
PACKAGES = ("memory", "backends", "fallback", "migrate", "seeds")
_PYCACHE = Path(tempfile.gettempdir()) / "dualmem-bench-capture-pycache"
"""where each process's bytecode is cached, as an installed package's is (a machine may set
PYTHONDONTWRITEBYTECODE, and every process would then compile the whole project again)"""


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DUALMEM_") and k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPATH": os.pathsep.join(filter(None, [str(tree),
                                                              os.environ.get("PYTHONPATH")])),
                  "PYTHONPYCACHEPREFIX": str(_PYCACHE)}


def compiled(tree: Path) -> None:
    """The tree's bytecode cached before anything is measured."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(tree / p) for p in PACKAGES)],
                   env=_env(tree), capture_output=True, check=True)


def process(argv: Sequence[str], stdin: bytes, cwd: Path, tree: Path = REPO
            ) -> tuple[float, float]:
    cpu, wall = _cpu_children(), time.perf_counter()
    done = subprocess.run(argv, input=stdin, cwd=cwd, env=_env(tree), capture_output=True,
                          check=False)
    result = (time.perf_counter() - wall) * 1000, (_cpu_children() - cpu) * 1000
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode()[-500:])
    return result


def whole_process(scratch: Path, data: bytes, runs: int, before: Path | None
                  ) -> dict[str, list[tuple[float, float]]]:
    times: dict[str, list[tuple[float, float]]] = {}
    more = Transcript(PROJECT)
    trees = [("", REPO)] + ([(" [before]", before)] if before is not None else [])
    for _, tree in trees:
        compiled(tree)
    for run in range(runs):
        times.setdefault("python -c pass (baseline)", []).append(
            process([sys.executable, "-c", "pass"], b"", scratch))
        for note, tree in trees:
            folder = scratch / f"proc-{run}{note.strip(' []')}"
            path, stop = session_folder(folder, data)
            argv = [*DUALMEM, "--backend", "file", "hook", "stop"]
            times.setdefault(f"dualmem hook stop: first{note}", []).append(
                process(argv, stop, folder, tree))
            more.lines = []
            turn(more, run)
            with path.open("ab") as handle:
                handle.write(placed(more.data(), folder))
            times.setdefault(f"dualmem hook stop: later (one turn more){note}", []).append(
                process(argv, stop, folder, tree))
            times.setdefault(f"dualmem hook stop: nothing new{note}", []).append(
                process(argv, stop, folder, tree))
            # Another session whose last turn failed; the Stop after its fix keeps a gotcha.
            more.lines = []
            met_failure(more, run)
            path, stop = session_folder(folder.with_name(folder.name + "-gotcha"),
                                        data + more.data())
            process(argv, stop, path.parent, tree)
            more.lines = []
            turn(more, 2 + 7 * run)  # a passing turn: the failure is fixed
            with path.open("ab") as handle:
                handle.write(placed(more.data(), path.parent))
            times.setdefault(f"dualmem hook stop: later, a gotcha kept{note}", []).append(
                process(argv, stop, path.parent, tree))
            # The same session in a git repository (most projects), a commit made during it:
            # each Stop asks git for the session's commits.
            path, stop = session_folder(folder.with_name(folder.name + "-git"), data)
            a_commit(path.parent)
            process(argv, stop, path.parent, tree)
            more.lines = []
            turn(more, run)
            with path.open("ab") as handle:
                handle.write(placed(more.data(), path.parent))
            times.setdefault(f"dualmem hook stop: later, in a git repository{note}",
                             []).append(process(argv, stop, path.parent, tree))
    return times


def session_folder(folder: Path, data: bytes) -> tuple[Path, bytes]:
    """A new project ``folder`` with a home and the transcript ``data``: the transcript's path
    and the Stop hook's input for it."""
    folder.mkdir()
    new_home(folder)
    path = folder / "s.jsonl"
    path.write_bytes(placed(data, folder))
    stop = orjson.dumps({"session_id": "bench", "transcript_path": str(path),
                         "cwd": str(folder), "hook_event_name": "Stop",
                         "stop_hook_active": False})
    return path, stop


def a_commit(folder: Path) -> None:
    """``folder`` a git repository with one commit, dated in the session's first minute."""
    when = (T0 + timedelta(minutes=1)).isoformat()
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when,
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
           "GIT_CONFIG_GLOBAL": os.devnull}
    (folder / "notes.py").write_text("def save(note):\n    pass\n")
    for argv in (["init", "-q"], ["add", "notes.py"], ["commit", "-qm", "notes: save"]):
        subprocess.run(["git", *argv], cwd=folder, env=env, check=True, capture_output=True)


def report(times: dict[str, list[tuple[float, float]]]) -> None:
    print(f"  {'':<56}{'wall p50':>9}{'cpu p50':>9}{'cpu p95':>9}{'wall max':>9}")
    for label, measured in times.items():
        wall = statistics.median(w for w, _ in measured)
        cpus = sorted(c for _, c in measured)
        p95 = cpus[min(len(cpus) - 1, round(0.95 * (len(cpus) - 1)))]
        print(f"  {label:<56}{wall:>9.0f}{statistics.median(cpus):>9.0f}{p95:>9.0f}"
              f"{max(w for w, _ in measured):>9.0f}")
    print(f"  (load average {' '.join(f'{n:.1f}' for n in os.getloadavg())})")


def main(sizes: Sequence[float], before: Path | None) -> None:
    runs = int(os.environ.get("DUALMEM_BENCH_RUNS", "5"))
    print(f"capture speed bench, {os.cpu_count()} cpu(s), {runs} runs each, ms "
          f"(targets: first Stop on 3 MB <= {FIRST_TARGET_MS:.0f}, later <= "
          f"{LATER_TARGET_MS:.0f})")
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="dualmem-bench-capture-") as scratch:
            folder = Path(scratch)
            data = session(size)
            lines = data.count(b"\n")
            print(f"\ntranscript of {len(data) / 2**20:.1f} MB, {lines:,} lines")
            report(in_process(folder, data, runs))
            report(whole_process(folder, data, runs, before))


if __name__ == "__main__":
    line = argparse.ArgumentParser(prog="python -m bench.capture_speed")
    line.add_argument("--before", type=Path, metavar="TREE",
                      help="another checkout of dualmem, measured in the same runs")
    line.add_argument("sizes", type=float, nargs="*", default=[3, 22], metavar="MB")
    parsed = line.parse_args()
    main(parsed.sizes, parsed.before)
