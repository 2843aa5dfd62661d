"""One transcript folded into what capture keeps of it, an event at a time.

``Session`` holds only plain JSON values, so it is saved with its cursor and the next Stop goes
on from where the last one ended: folding a transcript in any number of pieces gives the same
session as folding it at once. What it keeps is small and redacted: the first prompt, the last
reply, the project's files read and changed with what was said of them, each check's failures
and the runs that fixed them, commits, and the agent's labelled lessons."""

from __future__ import annotations

import re

from backends.lean_typing import TYPE_CHECKING
from backends.patterns import lazy
from memory.capture import checks
from memory.capture.lessons import Lessons
from memory.capture.redact import redact
from memory.capture.transcript import Compaction, Entry, Prompt, Reply, ToolResult, ToolUse

if TYPE_CHECKING:
    from typing import Any

EDITS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
READS = frozenset({"Read", "NotebookRead"})
MAX_NOTES = 5
MAX_NOTE = 300
MAX_FILES = 500
MAX_FIXED = 50
MAX_PENDING = 200
MAX_RETRY_CALLS = 3
"""calls after a tool's failed call within which its next working call is the fix: later, it
is another matter"""
MAX_PROMPT = 2000
MAX_REPLY = 1500
MAX_SCANNED = 20_000
"""characters of a reply read for what it says of files"""
_FILLERS = ("now", "next", "first", "then", "finally", "great", "good", "perfect", "okay", "ok")
_LEAD_INS = ("let me", "let's", "i'll", "i will", "i need to", "i'm going to", "i am going to",
             "we need to")
_LEAD_IN = lazy(rf"^(?:(?:{'|'.join(_FILLERS)})[,!.]?\s+)*(?:{'|'.join(_LEAD_INS)})\s+",
                re.IGNORECASE)
"""what a sentence says before what it is about: "Now let me ", "Ok, I'll " (``lead_in``)"""
_SENTENCE = lazy(r"(?<=[.!?])\s+|\n+")
_REJECTED = ("The user doesn't want to proceed", "was blocked", "[Request interrupted",
             "<tool_use_error>Cancelled: parallel tool call", "<tool_use_error>Sibling tool call")
"""a result saying the call never ran: no failure of what it would have run"""
# A failed call of another tool says something of the project when it met a path or a name
# that is not there; errors of the tool's own rules (read before editing, too large to read,
# the string to replace not found) say nothing worth keeping.
_PROJECT_ERROR = lazy(r"does not exist|not found|no such|unknown|is a directory|EISDIR"
                            r"|not a directory|permission denied", re.IGNORECASE)
_TOOL_RULE = lazy(r"has not been read yet|exceeds maximum|String to replace|Found \d+ "
                        r"matches|modified since|InputValidationError|Invalid tool parameters",
                        re.IGNORECASE)
_TOOL_TAGS = lazy(r"</?tool_use_error>")
# The sections of a compaction's summary that list files ("Files and Code Sections:")
_FILES_SECTION = lazy(r"^\s*(?:#+\s*)?\d+\.\s+\**Files and Code Sections\**:?\s*$",
                            re.MULTILINE | re.IGNORECASE)
_NEXT_SECTION = lazy(r"^\s*(?:#+\s*)?\d+\.\s+\**[A-Z][\w ]+\**:?\s*$", re.MULTILINE)
_BULLET_PATH = lazy(r"^(\s*)[-*]\s+\**`?([\w./@-]+\.\w+)`?\**\s*(?:[-:(—–]\s*(.*))?$")
_SUB_BULLET = lazy(r"^(\s*)[-*]\s+(.+)$")


class Seen:
    """What of a session its memories were last derived from: what every memory says of it,
    each file's state, how many fixes. A fold derives again only what its new lines changed
    (``derive``'s ``since``)."""

    __slots__ = ("files", "fixed", "shared")

    def __init__(self, session: Session) -> None:
        self.shared = (session.session_id, session.first_prompt, session.started)
        self.files = {path: (known["changed"], len(known["notes"]))
                      for path, known in session.files.items()}
        self.fixed = len(session.fixed)


class Session:
    """What one transcript file said so far (see the module docstring)."""

    def __init__(self, root: str, cwd: str = "", session_id: str = "", subagent: bool = False,
                 started: str = "", ended: str = "", first_prompt: str = "", prompts: int = 0,
                 last_reply: str = "", said: str = "", compactions: int = 0, lines: int = 0,
                 damaged: int = 0, pending: dict[str, dict[str, str]] | None = None,
                 files: dict[str, dict[str, Any]] | None = None,
                 failing: dict[str, dict[str, Any]] | None = None,
                 fixed: list[dict[str, Any]] | None = None,
                 checks: dict[str, dict[str, Any]] | None = None,
                 commits: list[str] | None = None, since_commit: list[str] | None = None,
                 lessons: dict[str, Any] | None = None) -> None:
        self.root = root
        """the project folder: paths under it are kept relative to it"""
        self.cwd = cwd
        """the session's own folder, as the transcript says: paths under it (and not under
        ``root``: a transcript from another machine) are kept relative to it; others not at
        all"""
        self.session_id = session_id
        self.subagent = subagent
        self.started = started
        self.ended = ended
        self.first_prompt = first_prompt
        self.prompts = prompts
        self.last_reply = last_reply
        self.said = said
        """the assistant's last words before its next tool call (what it means to do)"""
        self.compactions = compactions
        self.lines = lines
        self.damaged = damaged
        self.pending: dict[str, dict[str, str]] = {} if pending is None else pending
        self.files: dict[str, dict[str, Any]] = {} if files is None else files
        """path -> {"changed": bool, "read": bool, "notes": [what was said of it]}"""
        self.failing: dict[str, dict[str, Any]] = {} if failing is None else failing
        """check -> its first failure since it last passed, and what changed since"""
        self.fixed: list[dict[str, Any]] = [] if fixed is None else fixed
        self.checks: dict[str, dict[str, Any]] = {} if checks is None else checks
        """kind of check -> its last run"""
        self.commits: list[str] = [] if commits is None else commits
        self.since_commit: list[str] = [] if since_commit is None else since_commit
        self.lessons: dict[str, Any] = Lessons().to_json() if lessons is None else lessons

    def to_json(self) -> dict[str, Any]:
        """The session's fields, sharing its values (the session is saved at once, then
        dropped)."""
        return dict(vars(self))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Session:
        return cls(**data)

    def feed(self, entry: Entry | None) -> None:
        """Fold one line (None: a damaged one) into the session."""
        self.lines += 1
        if entry is None:
            self.damaged += 1
            return
        meta = entry.meta
        if meta.session_id and not self.session_id:
            self.session_id = meta.session_id
        if meta.cwd and not self.cwd:
            self.cwd = meta.cwd
        if meta.sidechain:
            self.subagent = True
        if meta.time:
            self.started = self.started or meta.time
            self.ended = max(self.ended, meta.time)
        lessons = Lessons(**self.lessons) if any(isinstance(e, Reply) for e in entry.events) \
            else None
        for event in entry.events:
            if isinstance(event, Prompt):
                self._prompt(event.text)
            elif isinstance(event, Compaction):
                self.compactions += 1
                self._compaction(event.text)
            elif isinstance(event, Reply):
                self._reply(event.text, lessons)
            elif isinstance(event, ToolUse):
                self._tool_use(event)
            elif isinstance(event, ToolResult):
                self._tool_result(event)
        if lessons is not None:
            self.lessons = lessons.to_json()

    # -- events

    def _prompt(self, text: str) -> None:
        self.prompts += 1
        self._reported(text)
        if not self.first_prompt:
            self.first_prompt = redact(text.strip())[:MAX_PROMPT]
        self.said = ""

    def _reply(self, text: str, lessons: Lessons | None) -> None:
        text = text.strip()
        if not text:
            return
        clean = redact(text)
        if lessons is not None:
            lessons.read(clean)
        text = text[:MAX_SCANNED]
        self.last_reply = clean[:MAX_REPLY]
        self.said = self.last_reply
        for path, sentence in self._sentences_naming_files(text):
            if self.files[path]["read"] or self.files[path]["changed"]:
                self._note(path, sentence)

    def _tool_use(self, use: ToolUse) -> None:
        given = use.input
        if len(self.pending) >= MAX_PENDING:
            self.pending.pop(next(iter(self.pending)))
        if use.name == "Bash" and isinstance(given.get("command"), str):
            self.pending[use.id] = {"tool": "Bash", "command": redact(given["command"])[:500]}
        elif use.name in EDITS | READS and (path := self._relative(
                given.get("file_path") or given.get("notebook_path"))) is not None:
            self.pending[use.id] = {"tool": use.name, "file": path, "said": self.said}
        else:
            self.pending[use.id] = {"tool": use.name, "target": _target(given)}
        for tried in self.failing.values():
            tried["calls"] = tried.get("calls", 0) + 1
        self.said = ""

    def _tool_result(self, result: ToolResult) -> None:
        use = self.pending.pop(result.tool_use_id, None)
        if use is None or result.text.startswith(_REJECTED):
            return
        if use["tool"] == "Bash":
            self._ran(use["command"], result)
            return
        call = f"{use['tool']} {use.get('file') or use.get('target') or ''}".strip()
        if result.is_error:
            self._tool_failed(use["tool"], call, result.text)
            return
        tried = self.failing.pop(f"tool:{use['tool']}", None)
        if tried is not None and tried["calls"] <= MAX_RETRY_CALLS and len(self.fixed) < MAX_FIXED:
            self.fixed.append({**tried, "fixed_by": call, "fixed_at": self.ended})
        if "file" in use:
            self._touched(use["file"], changed=use["tool"] in EDITS, said=use.get("said", ""))

    # -- what they mean

    def _touched(self, path: str, *, changed: bool, said: str) -> None:
        known = self._file(path)
        if known is None:
            return
        if changed:
            known["changed"] = True
            if path not in self.since_commit:
                self.since_commit.append(path)
            for failure in self.failing.values():
                if path not in failure["changed"]:
                    failure["changed"].append(path)
            intent = _intent(said)
            if intent:
                self._note(path, intent)
        else:
            known["read"] = True

    def _ran(self, command: str, result: ToolResult) -> None:
        run = checks.classify(command)
        output = result.text or _output_of(result.result)
        if checks.failed(run.kind, result.is_error, output):
            error = redact(checks.key_line(output))
            if run.kind == "commit" or not error:
                return
            if run.kind == "command" and not checks.says_error(output):
                return  # grep finding nothing, a test -f: a status, not a failure
            self.failing.setdefault(run.tool, {
                "kind": run.kind, "command": command, "error": error, "at": self.ended,
                "changed": [], "ran": []})
            if run.kind != "command":
                self.checks[run.kind] = {"command": command, "passed": False, "summary": error}
            return
        if run.kind == "commit":
            subject = redact(checks.commit_subject(command))
            if subject:
                self.commits.append(subject)
                for path in self.since_commit:
                    self._note(path, f"commit: {subject}")
            self.since_commit = []
            return
        if run.kind != "command":
            self.checks[run.kind] = {"command": command, "passed": True,
                                     "summary": redact(checks.summary_line(output))}
        failure = self.failing.pop(run.tool, None)
        fixed = failure is not None and bool(failure["changed"] or failure["ran"])
        if failure is not None and fixed and len(self.fixed) < MAX_FIXED:
            self.fixed.append({**failure, "fixed_by": command, "fixed_at": self.ended})
        for other in self.failing.values():
            if len(other["ran"]) < 3 and command not in other["ran"]:
                other["ran"].append(command)

    def _tool_failed(self, tool: str, call: str, output: str) -> None:
        """A call of a tool (no shell command) that met a missing path or name: a failed
        approach, fixed by the next call of the same tool that works, soon after."""
        error = " ".join(_TOOL_TAGS().sub("", output).split())
        if _TOOL_RULE().search(error) or not _PROJECT_ERROR().search(error):
            return
        self.failing[f"tool:{tool}"] = {
            "kind": "tool", "command": call, "error": redact(f"{call}: {error}")[:300],
            "at": self.ended, "changed": [], "ran": [], "calls": 0}

    def _reported(self, text: str) -> None:
        """A prompt holding a check's failed output (a person pasting what failed for them) is
        that check's failure, fixed as if the session had run it."""
        run = checks.pasted(text)
        if run.kind in ("command", "commit") or not checks.failed(run.kind, False, text):
            return
        error = redact(checks.key_line(text, first=False))  # the prompt's words are no error
        if error:
            self.failing.setdefault(run.tool, {
                "kind": run.kind, "command": "(a failure pasted in a prompt)", "error": error,
                "at": self.ended, "changed": [], "ran": []})

    def _compaction(self, text: str) -> None:
        """A compaction's summary lists the files it worked on, with why each matters."""
        start = _FILES_SECTION().search(text)
        if start is None:
            return
        rest = text[start.end():]
        end = _NEXT_SECTION().search(rest)
        section = rest[: end.start()] if end else rest
        current: str | None = None
        depth = 0
        in_code = False
        for line in section.splitlines():
            if line.strip().startswith("```"):
                in_code = not in_code
                continue
            if in_code:
                continue
            found = _BULLET_PATH().match(line)
            if found and (path := self._relative(found.group(2))) is not None:
                current, depth = path, len(found.group(1))
                self._file(path)
                if found.group(3):
                    self._note(path, redact(found.group(3)))
                continue
            sub = _SUB_BULLET().match(line)
            if current is not None and sub and len(sub.group(1)) > depth:
                note = re.sub(r"^\**(?:why important|importance|purpose|changes? made|summary)"
                              r"\**:\**\s*", "", sub.group(2), flags=re.IGNORECASE)
                if len(note) > 15:
                    self._note(current, redact(note))

    # -- helpers

    def _file(self, path: str) -> dict[str, Any] | None:
        known = self.files.get(path)
        if known is None and len(self.files) < MAX_FILES:
            known = self.files[path] = {"changed": False, "read": False, "notes": []}
        return known

    def _note(self, path: str, note: str) -> None:
        known = self._file(path)
        note = " ".join(note.split())[:MAX_NOTE].rstrip(":")
        if known is None or len(note) < 12 or len(known["notes"]) >= MAX_NOTES:
            return
        if note.casefold() not in (n.casefold() for n in known["notes"]):
            known["notes"].append(note)

    def _relative(self, value: Any) -> str | None:
        """A path as the project knows it (relative to its folder); None outside it."""
        if not isinstance(value, str) or not value.strip() or "\n" in value:
            return None
        path = _parts(value.strip())
        if path[0]:  # absolute
            under = [folder for folder in map(_parts, (self.root, self.cwd))
                     if folder[0] and path[:len(folder)] == folder]
            if not under:
                return None
            path = ["", *path[len(under[0]):]]
        text = "/".join(path[1:])
        return None if text in (".", "") or text.startswith("../") else text

    def _sentences_naming_files(self, text: str) -> list[tuple[str, str]]:
        if not self.files:
            return []
        found = []
        names = {path.rsplit("/", 1)[-1]: path for path in self.files}
        for sentence in _SENTENCE().split(text):
            if len(sentence) < 30 or lead_in(sentence.strip(" -*")):
                continue
            for name, path in names.items():
                if _names(sentence, name):
                    found.append((path, redact(sentence.strip(" -*"))))
        return found


def _parts(path: str) -> list[str]:
    """``path`` cut as ``PurePosixPath`` cuts it, as text (``pathlib``'s import costs a later
    Stop more than its reading): its root (``/``; ``//``, which POSIX keeps apart; '' for a
    relative path), then its names, without the empty and ``.`` ones."""
    root = "/" if path.startswith("/") else ""
    if path.startswith("//") and not path.startswith("///"):
        root = "//"
    return [root, *(name for name in path.split("/") if name not in ("", "."))]


def _names(sentence: str, name: str) -> bool:
    """Does ``sentence`` name the file ``name`` (``a.py``, not inside ``data.py``)?"""
    at = sentence.find(name)
    while at >= 0:
        before = sentence[at - 1] if at else " "
        if not (before.isalnum() or before in "_-."):
            return True
        at = sentence.find(name, at + 1)
    return False


def lead_in(text: str) -> int:
    """How long ``text``'s lead-in is (``_LEAD_IN``'s match), 0 when it has none; found by hand
    in ASCII text: the pattern's compile (~2M instructions) cost a later Stop more than the
    sentences it reads."""
    if not text.isascii():  # beyond ASCII, a case-blind 'k' also meets 'K' (Kelvin), 's' 'ſ'
        found = _LEAD_IN().match(text)
        return found.end() if found else 0
    lower = text.lower()
    at = 0
    while end := _spaced(lower, at, _FILLERS, ",!."):
        at = end
    return _spaced(lower, at, _LEAD_INS, "")


def _spaced(text: str, at: int, words: tuple[str, ...], marks: str) -> int:
    """Where the whitespace after one of ``words`` at ``at`` (with one of ``marks``) ends; 0
    when none of them is there with whitespace after it."""
    for word in words:
        if text.startswith(word, at):
            end = at + len(word)
            end += end < len(text) and text[end] in marks
            spaces = end
            while spaces < len(text) and text[spaces].isspace():
                spaces += 1
            if spaces > end:
                return spaces
    return 0


def _intent(said: str) -> str:
    """What the assistant said it was about to do, as a note on the file it then changed:
    the last sentence before the edit, without "Now let me"."""
    sentences = [s.strip(" -*") for s in _SENTENCE().split(said) if s.strip(" -*")]
    if not sentences:
        return ""
    last = sentences[-1][lead_in(sentences[-1]):].rstrip(":.")
    return last[:1].upper() + last[1:] if len(last) >= 15 else ""


def _target(given: dict[str, Any]) -> str:
    """What a tool call was aimed at, in a few words: its first short text argument."""
    for value in given.values():
        if isinstance(value, str) and value.strip() and "\n" not in value and len(value) <= 200:
            return redact(value.strip())
    return ""


def _output_of(result: Any) -> str:
    if isinstance(result, dict):
        return "\n".join(str(result.get(k) or "") for k in ("stdout", "stderr"))
    return result if isinstance(result, str) else ""
