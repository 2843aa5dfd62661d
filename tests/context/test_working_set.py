"""The working set joins the context: memories naming a working file, and what its discovery
says it is for, are kept though the task's words do not reach them; the command line takes
``--file``."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from backends.model import Episode
from fallback import FileBackend
from memory.cli import main
from memory.context import Task, build_context

PROJECT = "proj-1"
Memory = tuple[str, str, str | dict[str, str]]
MEMORIES: list[Memory] = [
    ("codebase_discovery", "app/services/fx.py",
     {"path": "app/services/fx.py", "description": "Currency conversion with exchange rates"}),
    ("gotcha", "The ECB publishes no exchange rates on weekends",
     "The ECB publishes no exchange rates on weekends; use Friday's rates"),
    ("pattern", "fx.py caches rates per day", "app/services/fx.py caches rates per day"),
    ("gotcha", "Dispute events arrive at the webhook", "Dispute events arrive at the webhook"),
]


async def _contexts(folder: Path, memories: list[Memory],
                    files: tuple[str, ...]) -> tuple[str, str]:
    """The context of a testing task on ``memories``, without and with the working set."""
    store = await FileBackend.open(folder / "files")
    try:
        for kind, name, body in memories:
            await store.upsert(Episode.create(
                group_id=PROJECT, kind=kind, name=name,
                body=body if isinstance(body, str) else orjson.dumps(body).decode()))
        task = Task(description="Write tests for the conversion of foreign charges",
                    task_type="testing")
        without = (await build_context(store, task, project_id=PROJECT)).markdown
        given = task.model_copy(update={"files": files})
        return without, (await build_context(store, given, project_id=PROJECT)).markdown
    finally:
        await store.aclose()


async def test_the_files_of_the_work_bring_their_memories(tmp_path: Path) -> None:
    without, with_files = await _contexts(tmp_path, MEMORIES, ("app/services/fx.py",))
    assert "ECB" not in without  # the task says "conversion", the memory "exchange rates"
    assert "caches rates per day" in with_files and "ECB publishes" in with_files
    assert "Dispute events" not in with_files


def test_the_command_line_takes_the_files_of_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = str(tmp_path / ".dualmem")
    assert main(["--home", home, "--backend", "file", "add", "--kind", "gotcha", "--name",
                 "fx.py caches rates", "--body", "app/services/fx.py caches rates per day"]) == 0
    capsys.readouterr()
    assert main(["--home", home, "--backend", "file", "context", "Write tests for currency",
                 "--file", "app/services/fx.py", "--file", "tests/test_fx.py", "--json"]) == 0
    shown = orjson.loads(capsys.readouterr().out)
    assert "caches rates per day" in shown["markdown"]


async def test_the_task_context_tool_takes_the_files_of_the_work(tmp_path: Path) -> None:
    from memory.mcp.tools import MemoryTools
    from memory.store.project import ensure_project_id

    home = tmp_path / "project" / ".dualmem"
    ensure_project_id(home / "project.json", "project")
    store = await FileBackend.open(tmp_path / "files")
    try:
        tools = MemoryTools(store, home)
        await tools.add_memory(kind="gotcha", text="app/services/fx.py caches rates per day")
        task = "Write tests for currency"
        without = await tools.get_task_context(task=task, complexity=3)
        given = await tools.get_task_context(task=task, complexity=3,
                                             files=["app/services/fx.py"])
    finally:
        await store.aclose()
    assert "caches rates per day" not in without.markdown
    assert "caches rates per day" in given.markdown


async def test_what_names_only_other_files_is_left_out_given_the_files(tmp_path: Path) -> None:
    """A memory not tied to the working set that names files, none of them a working file
    (another file's discovery sharing the task's words), is another part of the code; and what
    a working file's discovery says does not bring a memory naming only another folder's
    files."""
    without, with_files = await _contexts(tmp_path, [
        *MEMORIES,
        ("codebase_discovery", "tests/test_fx.py",
         {"path": "tests/test_fx.py",
          "description": "Tests for the conversion of foreign charges to the merchant's "
                         "currency"}),
        ("codebase_discovery", "app/api/refunds.py",
         {"path": "app/api/refunds.py",
          "description": "Refunds of foreign charges, in the charge currency"}),
        ("gotcha", "Exchange rates in admin/src/pages/Rates.tsx",
         "admin/src/pages/Rates.tsx shows exchange rates rounded to two places"),
    ], ("app/services/fx.py", "tests/test_fx.py"))
    assert "Refunds of foreign charges" in without
    assert "Refunds of foreign charges" not in with_files
    assert "rounded to two places" not in with_files
    assert "ECB publishes" in with_files and "caches rates per day" in with_files
