"""What a Claude Code session leaves in memory by itself: real transcripts replayed through
``dualmem hook stop`` in time order, scored against what a person labelled by hand.

    python -m bench.capture_quality [--dualmem PATH ...] [--backend B] [--cuts N]
                                    [--sample N] [--keep FOLDER] [PROJECT ...]

A project is a folder of ``bench/transcripts/`` (default: every one): Claude Code transcripts and
``labels.json``, which lists the sessions in time order and, per session, what a person would
want remembered (files and what they are for, failures with their fixes, decisions, the task),
each with the terms a kept memory must contain. The folders' READMEs name their sources and
licences.

Black-box, through the command line only, so that any checkout can be measured: for each
``--dualmem`` (a venv's ``bin`` folder, a ``dualmem`` executable, or a checkout, run as
``python -m memory`` with the checkout first on ``PYTHONPATH``; default: this checkout), a fresh
project folder (``dualmem init``) and a fresh ``HOME``. Each session's transcript is laid where
Claude Code keeps it (``~/.claude/projects/<encoded folder>/<session>.jsonl``) as if the session
had run in the project folder (the path of the folder it ran in is replaced by the project
folder's, so that Stop's ``cwd``, the transcript's and the paths it names agree as in use), and
grows as it did: it is cut at the ends of turns (the line before the next prompt; ``--cuts`` of
them, spread over the session, then the whole), and after each cut Claude Code's Stop input is
sent to ``dualmem hook stop``. After each session, ``dualmem list --json --all-groups``.

Every line is replayed ending with a newline, as Claude Code writes it (a copy may have lost
the last one). Measured, beside each other for every ``--dualmem``:

- recall of the labels, per kind: a label is found when, after its session, one kept memory's
  name and body (case-folded) contain every one of its terms (a term may list spellings);
- recall of the labels that no prompt of the session holds: what the session learned, not what
  the person typed (a plan pasted as the first prompt holds many labels), and the size of the
  bodies kept (one memory holding a whole session would match every label);
- memories kept per session (new or changed in it);
- sessions leaving memory (new or changed in them) that names at least half the files they
  edited (``Edit``, ``Write``, ``MultiEdit`` and ``NotebookEdit`` calls, as paths relative to
  the session's folder, or absolute);
- sessions leaving a failure with its fix (a ``gotcha`` or ``failed_approach`` new or changed
  in them);
- memories that match no label, listed, and a sample of every kept memory (``--sample``): a
  person judges which are noise (a memory can match a label and still be noise, e.g. the
  agent's narration filed under the wrong file);
- what a second Stop on every whole transcript changes (it should change nothing), and how the
  memories differ from those of one Stop per whole session, replayed first in the same folders
  under the same project id (they should not differ);
- Stop failures (an exit status other than 0, or a line on stderr) and Stop's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"
KINDS = ("task", "file", "failure_fix", "decision")
EDITS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
FAILURE_KINDS = frozenset({"gotcha", "failed_approach"})
CUTS = 6
"""Stops per session before the whole transcript: enough to see what each turn adds."""
_NOT_PROMPTS = ("<local-command", "<command-name>", "<command-message>")
"""Command wrappers Claude Code writes as user lines: no turn starts there."""


@dataclass(frozen=True)
class Label:
    id: str
    kind: str
    terms: tuple[tuple[str, ...], ...]
    """Every term must be in the memory's text; a term is found when any of its spellings is."""

    def found_in(self, text: str) -> bool:
        return all(any(spelling in text for spelling in term) for term in self.terms)


@dataclass(frozen=True)
class Session:
    id: str
    transcript: Path
    labels: tuple[Label, ...]


@dataclass(frozen=True)
class Project:
    name: str
    sessions: tuple[Session, ...]


def load_project(folder: Path) -> Project:
    """The sessions of ``folder/labels.json``, in time order."""
    document = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
    sessions = sorted(document["sessions"], key=lambda s: s["started_at"])
    return Project(document["project"], tuple(
        Session(s["session_id"], folder / s["file"], tuple(
            Label(item["id"], item["kind"], tuple(
                tuple(t.casefold() for t in ([term] if isinstance(term, str) else term))
                for term in item["terms"]))
            for item in s["items"]))
        for s in sessions))


def projects(names: Sequence[str] = ()) -> list[Project]:
    folders = [TRANSCRIPTS / n for n in names] or sorted(
        p.parent for p in TRANSCRIPTS.glob("*/labels.json"))
    return [load_project(folder) for folder in folders]


# What the transcript says -------------------------------------------------------------------

def _records(lines: Sequence[bytes]) -> Iterable[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield number, record


def _is_prompt(record: dict[str, Any]) -> bool:
    """A line a person typed: a user message that is no tool result and no command wrapper."""
    if record.get("type") != "user" or record.get("isMeta") or "toolUseResult" in record:
        return False
    content = (record.get("message") or {}).get("content")
    if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return False
    text = _text(content)
    return bool(text.strip()) and not text.lstrip().startswith(_NOT_PROMPTS)


def _text(content: object) -> str:
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content if isinstance(content, str) else ""


def prompts(lines: Sequence[bytes]) -> list[str]:
    """What the person typed, one text per prompt, case-folded."""
    return [_text((record.get("message") or {}).get("content")).casefold()
            for _, record in _records(lines) if _is_prompt(record)]


def transcript_lines(session: Session, folder: Path | None = None) -> list[bytes]:
    """The session's lines as Claude Code writes them, each ending with a newline (a copy may
    have lost the last one; a capture would take that line for one still being written); with
    ``folder``, as if the session had run there (its folder's path replaced everywhere)."""
    lines = [line if line.endswith(b"\n") else line + b"\n"
             for line in session.transcript.read_bytes().splitlines(keepends=True)]
    started = next((r["cwd"] for _, r in _records(lines) if isinstance(r.get("cwd"), str)), "")
    if folder is None or not started:
        return lines
    return [line.replace(started.encode(), str(folder).encode()) for line in lines]


def cut_points(lines: Sequence[bytes], most: int) -> list[int]:
    """How many lines Claude Code had written at each Stop replayed: at most ``most`` ends of
    turns (the line before a prompt), spread over the session, then the whole transcript."""
    prompts = [n for n, record in _records(lines) if _is_prompt(record)]
    ends = prompts[1:]  # the first prompt starts the session, no turn ended before it
    if len(ends) > most:
        ends = [ends[round(i * (len(ends) - 1) / max(most - 1, 1))] for i in range(most)]
    return sorted({*ends, len(lines)})


def last_reply(lines: Sequence[bytes]) -> str | None:
    """The text of the last assistant reply: what newer Claude Code sends Stop."""
    for _, record in reversed(list(_records(lines))):
        reply = _text((record.get("message") or {}).get("content"))
        if record.get("type") == "assistant" and reply.strip():
            return reply.strip()
    return None


def edited_files(lines: Sequence[bytes]) -> tuple[str, set[str]]:
    """The session's folder and the files it edited, relative to the folder the session was in
    at the edit (a folder can be renamed mid-session) when inside it."""
    first, files = "", set()
    for _, record in _records(lines):
        folder = record.get("cwd") or ""
        first = first or folder
        if record.get("type") != "assistant":
            continue
        for block in (record.get("message") or {}).get("content") or []:
            if not (isinstance(block, dict) and block.get("type") == "tool_use"
                    and block.get("name") in EDITS):
                continue
            given = block.get("input") or {}
            path = given.get("file_path") or given.get("notebook_path")
            if isinstance(path, str) and path:
                inside = folder and path.startswith(folder.rstrip("/") + "/")
                files.add(path[len(folder.rstrip("/")) + 1:] if inside else path)
    return first, files


# Running dualmem ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Dualmem:
    """How to run one checkout's ``dualmem``: a command and what to add to ``PYTHONPATH``."""

    label: str
    argv: tuple[str, ...]
    pythonpath: str = ""

    @classmethod
    def at(cls, where: Path | None) -> Dualmem:
        if where is None:
            return cls("this checkout", (sys.executable, "-m", "memory"), str(REPO))
        where = where.resolve()
        if (where / "dualmem").is_file():
            return cls(str(where), (str(where / "dualmem"),))
        if (where / "memory" / "__init__.py").is_file():
            return cls(str(where), (sys.executable, "-m", "memory"), str(where))
        if where.is_file():
            return cls(str(where), (str(where),))
        raise SystemExit(f"--dualmem {where}: not a venv's bin folder, a dualmem executable "
                         "or a checkout of dualmem")

    def run(self, argv: Sequence[str], cwd: Path, home: Path, backend: str | None,
            stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DUALMEM_")}
        env["HOME"] = str(home)  # whatever the hook looks for in ~/.claude is the replay's
        if self.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [self.pythonpath,
                                                              env.get("PYTHONPATH")]))
        flags = ["--backend", backend] if backend else []
        return subprocess.run([*self.argv, *flags, *argv], input=stdin, cwd=cwd, env=env,
                              capture_output=True, check=False)


@dataclass
class SessionResult:
    session: Session
    stops: int = 0
    kept: list[dict[str, Any]] = field(default_factory=list)
    """Memories new or changed in this session."""
    found: dict[str, bool] = field(default_factory=dict)
    prompted: set[str] = field(default_factory=set)
    """The labels that a prompt of the session already holds: what the person said, not what
    the session learned."""
    edited: set[str] = field(default_factory=set)
    named: set[str] = field(default_factory=set)
    """The edited files that the memories kept in this session name."""


@dataclass
class Result:
    dualmem: Dualmem
    project: Project
    sessions: list[SessionResult] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)
    """Every memory kept at the end."""
    second_stop_changes: int = 0
    one_stop_differs: list[tuple[str, ...]] | None = None
    """Memories (as id, kind, name, ...) kept by one Stop per whole session or by the Stops at
    the turns, not by both (None: not measured)."""
    failures: list[str] = field(default_factory=list)
    """Stops that exited non-zero or wrote to stderr: their last line."""
    seconds: list[float] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    """What each Stop printed, when it printed more than ``{}``."""

    def unmatched(self) -> list[dict[str, Any]]:
        labels = [label for s in self.project.sessions for label in s.labels]
        return [m for m in self.memories
                if not any(label.found_in(text_of(m)) for label in labels)]


def text_of(memory: dict[str, Any]) -> str:
    return f"{memory.get('name', '')}\n{memory.get('body', '')}".casefold()


def _fingerprint(memory: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(memory.get(k)) for k in ("id", "kind", "name", "body", "invalid_at"))


def _encoded(folder: Path) -> str:
    """Claude Code's name for a project's folder under ~/.claude/projects."""
    return "".join(c if c.isalnum() else "-" for c in str(folder))


class Replay:
    """One fresh project and ``HOME``, and the Stops of one ``dualmem``."""

    def __init__(self, dualmem: Dualmem, scratch: Path, backend: str | None,
                 project: bytes | None = None) -> None:
        """``project``: the ``.dualmem/project.json`` to start from, as a clone of the project
        would carry it (the same project id, so the same memory ids)."""
        self.dualmem, self.backend = dualmem, backend
        self.home, self.folder = scratch / "home", scratch / "project"
        self.folder.mkdir(parents=True)
        if project is not None:
            (self.folder / ".dualmem").mkdir()
            (self.folder / ".dualmem" / "project.json").write_bytes(project)
        self.sessions = self.home / ".claude" / "projects" / _encoded(self.folder)
        self.sessions.mkdir(parents=True)
        self._checked(["init"])

    def _checked(self, argv: Sequence[str]) -> bytes:
        done = self.dualmem.run(argv, self.folder, self.home, self.backend)
        if done.returncode != 0:
            raise RuntimeError(f"dualmem {' '.join(argv)}: {done.stderr.decode()[-500:]}")
        return done.stdout

    def memories(self) -> list[dict[str, Any]]:
        listed = json.loads(self._checked(["list", "--json", "--all-groups"]))
        episodes: list[dict[str, Any]] = listed["episodes"]
        return episodes

    def transcript(self, session: Session) -> Path:
        return self.sessions / f"{session.id}.jsonl"

    def stop(self, session: Session, lines: Sequence[bytes], result: Result) -> None:
        """Claude Code's Stop after the transcript has ``lines``: appended to, as it grows."""
        path = self.transcript(session)
        written = path.read_bytes() if path.exists() else b""
        whole = b"".join(lines)
        if not whole.startswith(written):
            raise RuntimeError(f"{session.id}: a Stop replayed on a shorter transcript")
        with path.open("ab") as transcript:
            transcript.write(whole[len(written):])
        payload = {"session_id": session.id, "transcript_path": str(path),
                   "cwd": str(self.folder), "permission_mode": "default",
                   "hook_event_name": "Stop", "stop_hook_active": False,
                   "last_assistant_message": last_reply(lines)}
        started = time.perf_counter()
        done = self.dualmem.run(["hook", "stop"], self.folder, self.home, self.backend,
                                json.dumps(payload).encode())
        result.seconds.append(time.perf_counter() - started)
        if done.returncode != 0 or done.stderr.strip():
            result.failures.append(
                f"{session.id[:8]} exit {done.returncode}: "
                f"{(done.stderr.decode(errors='replace').strip().splitlines() or [''])[-1]}")
        printed = done.stdout.decode(errors="replace").strip()
        if printed not in ("", "{}"):
            result.outputs.append(printed)


def measure(dualmem: Dualmem, project: Project, scratch: Path, *, cuts: int = CUTS,
            backend: str | None = None, one_stop: bool = True) -> Result:
    """Replays ``project``'s sessions in time order through ``dualmem``'s Stop, in ``scratch``;
    with ``one_stop``, first with one Stop per whole session, in the same folders and under the
    same project id, to compare (Stops at the turns must keep what one Stop at the end
    keeps)."""
    result = Result(dualmem, project)
    once: set[tuple[str, ...]] | None = None
    cloned = None
    if one_stop:
        single = Replay(dualmem, scratch, backend)
        for session in project.sessions:
            single.stop(session, transcript_lines(session, single.folder), result)
        once = {_fingerprint(m) for m in single.memories()}
        result.seconds.clear()  # the Stops measured are those of the replay by turns
        cloned = (single.folder / ".dualmem" / "project.json").read_bytes()
        shutil.rmtree(single.home)
        shutil.rmtree(single.folder)
    replay = Replay(dualmem, scratch, backend, cloned)
    after = replay.memories()
    before = {_fingerprint(m) for m in after}
    for session in project.sessions:
        lines = transcript_lines(session, replay.folder)
        outcome = SessionResult(session)
        for cut in cut_points(lines, cuts):
            replay.stop(session, lines[:cut], result)
            outcome.stops += 1
        after = replay.memories()
        outcome.kept = [m for m in after if _fingerprint(m) not in before]
        before = {_fingerprint(m) for m in after}
        texts = [text_of(m) for m in after]
        outcome.found = {label.id: any(label.found_in(t) for t in texts)
                         for label in session.labels}
        said = prompts(lines)
        outcome.prompted = {label.id for label in session.labels
                            if any(label.found_in(text) for text in said)}
        folder, outcome.edited = edited_files(lines)
        kept = [text_of(m) for m in outcome.kept]
        outcome.named = {f for f in outcome.edited
                         if any(f.casefold() in t or f"{folder}/{f}".casefold() in t
                                for t in kept)}
        result.sessions.append(outcome)
    if once is not None:
        result.one_stop_differs = sorted(once ^ before)
    for session in project.sessions:  # a second Stop on every whole transcript
        replay.stop(session, transcript_lines(session, replay.folder), result)
    result.memories = replay.memories()
    result.second_stop_changes = len(before ^ {_fingerprint(m) for m in result.memories})
    return result


# The report -----------------------------------------------------------------------------------

def _share(hits: int, total: int) -> str:
    return f"{hits}/{total} ({hits / total:.0%})" if total else "-"


def rows(result: Result) -> dict[str, str]:
    """The figures of one run, by row name."""
    labels = [(label, s.found[label.id]) for s in result.sessions for label in s.session.labels]
    figures = {"recall, all labels": _share(sum(f for _, f in labels), len(labels))}
    for kind in KINDS:
        of_kind = [f for label, f in labels if label.kind == kind]
        figures[f"  {kind}"] = _share(sum(of_kind), len(of_kind))
    learned = [s.found[label.id] for s in result.sessions for label in s.session.labels
               if label.id not in s.prompted]
    figures["recall, labels no prompt holds"] = _share(sum(learned), len(learned))
    figures["recall per session"] = " ".join(
        f"{sum(s.found.values())}/{len(s.found)}" for s in result.sessions)
    figures["memories kept per session"] = " ".join(str(len(s.kept)) for s in result.sessions)
    figures["memories at the end"] = str(len(result.memories))
    sizes = [len(str(m.get("body", ""))) for m in result.memories]
    # A memory holding a whole session would match every label.
    figures["body chars, p50 / max"] = (
        f"{statistics.median(sizes):.0f} / {max(sizes)}" if sizes else "-")
    figures["sessions naming >= half edited"] = _share(
        sum(2 * len(s.named) >= len(s.edited) for s in result.sessions if s.edited),
        sum(bool(s.edited) for s in result.sessions))
    figures["edited files named per session"] = " ".join(
        f"{len(s.named)}/{len(s.edited)}" for s in result.sessions)
    figures["sessions with a failure kept"] = _share(
        sum(any(m.get("kind") in FAILURE_KINDS for m in s.kept) for s in result.sessions),
        len(result.sessions))
    figures["memories matching no label"] = _share(len(result.unmatched()), len(result.memories))
    figures["second Stop: memories changed"] = str(result.second_stop_changes)
    figures["Stops by turn vs one: differing"] = (
        "-" if result.one_stop_differs is None else str(len(result.one_stop_differs)))
    figures["Stops / exit != 0 or stderr"] = f"{len(result.seconds)} / {len(result.failures)}"
    if result.seconds:
        figures["Stop wall s, p50 / max"] = (f"{statistics.median(result.seconds):.2f} / "
                                             f"{max(result.seconds):.2f}")
    return figures


def report(results: Sequence[Result], sample: int) -> None:
    project = results[0].project
    print(f"\n{project.name}: {len(project.sessions)} sessions, "
          f"{sum(len(s.labels) for s in project.sessions)} labels")
    tables = [rows(r) for r in results]
    width = max(36, *(len(v) + 2 for t in tables for v in t.values()))
    for n, r in enumerate(results):
        print(f"  [{n + 1}] {r.dualmem.label}")
    print(f"  {'':<34}" + "".join(f"{f'[{n + 1}]':>{width}}" for n in range(len(results))))
    for name in tables[0]:
        print(f"  {name:<34}" + "".join(f"{t.get(name, '-'):>{width}}" for t in tables))
    for n, r in enumerate(results):
        missing = [label.id for s in r.sessions for label in s.session.labels
                   if not s.found[label.id]]
        print(f"\n  [{n + 1}] labels not found ({len(missing)}): {' '.join(missing)}")
        for differing in (r.one_stop_differs or [])[:6]:
            print(f"  [{n + 1}] kept by one of one Stop and the Stops by turn: "
                  f"{differing[1]}: {differing[2][:120]}")
        for failure in r.failures[:5]:
            print(f"  [{n + 1}] Stop's exit status or stderr: {failure}")
        if r.outputs:
            print(f"  [{n + 1}] Stop printed, last: {r.outputs[-1][:300]}")
        unmatched = r.unmatched()
        print(f"  [{n + 1}] memories matching no label ({len(unmatched)}): judge them by hand")
        for memory in unmatched:
            print(f"      {_line(memory)}")
        picked = random.Random(0).sample(r.memories, min(sample, len(r.memories)))
        print(f"  [{n + 1}] a sample of {len(picked)} kept memories, to judge by hand")
        for memory in picked:
            print(f"      {_line(memory)}")


def _line(memory: dict[str, Any]) -> str:
    body = " ".join(str(memory.get("body", "")).split())
    return f"{memory.get('kind')}: {memory.get('name')} | {body[:160]}"


def main(dualmems: Sequence[Path | None] = (None,), names: Sequence[str] = (),
         cuts: int = CUTS, backend: str | None = None, sample: int = 20,
         keep: Path | None = None) -> None:
    runs = [Dualmem.at(where) for where in dualmems]
    print(f"capture quality bench: Stop replayed at <= {cuts} turn ends per session and at "
          f"its end, then once more on every whole transcript; backend {backend or 'default'}")
    for project in projects(names):
        results = []
        for dualmem in runs:
            with tempfile.TemporaryDirectory(prefix="dualmem-bench-capture-") as scratch:
                results.append(measure(dualmem, project, Path(scratch), cuts=cuts,
                                       backend=backend))
        report(results, sample)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for n, result in enumerate(results):
                kept = keep / f"{project.name}-{n + 1}.json"
                kept.write_text(json.dumps({"dualmem": result.dualmem.label,
                                            "memories": result.memories}, indent=1))
                print(f"  [{n + 1}] every memory kept: {kept}")


if __name__ == "__main__":
    line = argparse.ArgumentParser(prog="python -m bench.capture_quality")
    line.add_argument("--dualmem", type=Path, action="append", metavar="PATH",
                      help="a venv's bin folder, a dualmem executable or a checkout of dualmem "
                      "(repeat to measure several side by side; default: this checkout)")
    line.add_argument("--backend", choices=["auto", "graph", "file"],
                      help="passed to every dualmem command (default: dualmem's own)")
    line.add_argument("--cuts", type=int, default=CUTS, metavar="N",
                      help="Stops at turn ends per session before the whole (default: %(default)s)")
    line.add_argument("--sample", type=int, default=20, metavar="N",
                      help="kept memories listed at random for judging (default: %(default)s)")
    line.add_argument("--keep", type=Path, metavar="FOLDER",
                      help="write every kept memory there, one JSON file per project and run")
    line.add_argument("projects", nargs="*", metavar="PROJECT",
                      help=f"folders of {TRANSCRIPTS.relative_to(REPO)} (default: all)")
    parsed = line.parse_args()
    main(parsed.dualmem or [None], parsed.projects, parsed.cuts, parsed.backend, parsed.sample,
         parsed.keep)
