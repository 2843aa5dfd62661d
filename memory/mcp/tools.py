"""What the MCP server offers, as plain async methods over one open store: the SDK-free half of
``dualmem mcp`` (``memory.mcp.server`` publishes these, with their signatures and docstrings,
as tools and resources).

Every parameter is typed and described; the descriptions are what the agent reads. Memories go
to the project's group (tagged with their spec, with ``spec``) and searches read it unless told
otherwise.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from backends.errors import InvalidEpisode
from backends.model import Episode, check_group_id, stable_id
from backends.protocol import MemoryBackend
from memory.agent.decisions import Adr, next_adr_id, record_adr
from memory.agent.gaps import (
    CapturedKnowledge,
    KnowledgeCategory,
    KnowledgeGap,
    analyze_gaps,
    capture_knowledge,
)
from memory.agent.knowledge import (
    gate_thresholds,
    project_overrides,
    resolve_role_constraints,
    suggest_implementation_mode,
)
from memory.agent.markdown import render_pages
from memory.agent.memories import AgentMemory
from memory.agent.scopes import ADR, GOTCHA, PATTERN, project_group
from memory.agent.turns import TurnState, latest_turn
from memory.context import (
    CachedStore,
    Phase,
    Task,
    TaskTypeName,
    build_context,
    load_critical_context,
)
from memory.context.areas import AreaGuess
from memory.context.cache import DEFAULT_TTL_SECONDS
from memory.output import one_line
from memory.store.config import ConfigError
from memory.store.project import project_folder, project_id
from memory.workset import working_set
from seeds import ImplementationMode, KnowledgeError, Overrides, QualityGateProfile, RoleConstraints

log = logging.getLogger(__name__)

# The tool's own words: a schema must spell them; gotcha and pattern are the kinds themselves.
MemoryKind = Literal["gotcha", "pattern", "discovery", "outcome", "decision"]
VIEWS = ("patterns.md", "gotchas.md")
TEXT_CHARS = 4000
"""A found memory's text is cut here: an agent needs the gist, and a body may be 1 MiB."""

Complexity = Annotated[int, Field(ge=1, le=10, description="How hard the task is, 1-10.")]
TaskTypeArg = Annotated[TaskTypeName, Field(
    description="The kind of task (implementation, review, planning, refinement, "
    "documentation, feature, bugfix, testing, ...).")]
Spec = Annotated[str | None, Field(
    description="A spec (feature) id: the memory is that spec's (its number or text may repeat "
    "in other specs without clashing); the project still sees it. Session history with a "
    "spec lists that spec's sessions only.")]


class FoundMemory(BaseModel):
    id: str
    group_id: str
    kind: str
    name: str
    score: float = Field(description="How much of the query matched, 0-1.")
    created_at: datetime
    text: str = Field(description=f"The memory's body, cut at {TEXT_CHARS} characters.")


class SavedMemory(BaseModel):
    id: str = Field(description="Its id; saving the same text (or key) again updates it.")
    group_id: str
    kind: str
    name: str


class TaskContext(BaseModel):
    markdown: str = Field(description="The context, empty when nothing stored is relevant.")
    tokens_used: int
    budget: int
    memories: dict[str, list[SavedMemory]] = Field(
        description="The memories it shows, per section (category), as shown.")


class CriticalContextData(BaseModel):
    markdown: str = Field(description="All of it, as Markdown.")
    role_constraints: dict[str, Any]
    quality_gates: dict[str, Any] = Field(
        description="Coverage thresholds are fractions (0.8 is 80%).")
    decisions: list[dict[str, Any]] = Field(description="Architecture decisions in force.")
    failed_approaches: list[dict[str, Any]]
    failure_patterns: list[dict[str, Any]]
    feature_overview: dict[str, Any] | None


class SavedSession(BaseModel):
    session_number: int
    saved: dict[str, int] = Field(description="How many memories of each kind were stored.")


class ModeAdvice(BaseModel):
    mode: ImplementationMode
    task_type: str = Field(description="The task type as the quality gates name it.")
    complexity: int
    reason: str


def _found(episode: Episode, score: float) -> FoundMemory:
    text = episode.body if len(episode.body) <= TEXT_CHARS else episode.body[:TEXT_CHARS] + "…"
    return FoundMemory(id=episode.id, group_id=episode.group_id, kind=episode.kind,
                       name=episode.name, score=round(score, 4), created_at=episode.created_at,
                       text=text)


def _saved(episode: Episode) -> SavedMemory:
    return SavedMemory(id=episode.id, group_id=episode.group_id, kind=episode.kind,
                       name=episode.name)


class MemoryTools:
    """The tools of one home's project, over a store opened once (the caller closes it).

    Context assembly reads through a search cache (FEAT-GR-006's 300 s): every write made
    through these tools drops it, another session's writes reach a context once its entries
    expire. ``search_memories`` always reads the store itself, so an agent looking for what
    another session just wrote finds it."""

    def __init__(
        self, store: MemoryBackend, home: Path, *, cache_ttl: float = DEFAULT_TTL_SECONDS,
        guess_areas: AreaGuess | None = None,
    ) -> None:
        self.fresh = store
        self.guess_areas = guess_areas
        """the configured LLM's area inference (``memory.store.area_guess``), if any"""
        self.store: MemoryBackend = CachedStore(store, ttl=cache_ttl)
        self.home = home
        self.project_id = project_id(home)
        self._reported: str | None = None

    def _overrides(self) -> Overrides:
        """The project's overrides, read afresh (a person may fix the file while the server
        runs). A bad file fails the tools that apply overrides, with one line naming the file
        and what is wrong; the server's log says it once, not at every call."""
        try:
            return project_overrides(self.home)
        except KnowledgeError as exc:
            if str(exc) != self._reported:
                self._reported = str(exc)
                log.warning("the project's overrides are not applied: %s", one_line(exc))
            raise

    def _memory(self, spec: str | None) -> AgentMemory:
        return AgentMemory(self.store, self.project_id, spec, source="mcp")

    async def search_memories(
        self,
        query: Annotated[str, Field(description="Keywords; misspellings are tolerated.")],
        kinds: Annotated[list[str] | None, Field(
            description="Only these kinds (gotcha, pattern, codebase_discovery, task_outcome, "
            "adr, failed_approach, session_insight, ...); default: every kind.")] = None,
        groups: Annotated[list[str] | None, Field(
            description="Only these groups; default: the project's group.")] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many.")] = 10,
    ) -> list[FoundMemory]:
        """Search this project's memory by keywords: gotchas, patterns, file discoveries,
        task outcomes, decisions and session insights, best match first."""
        group_ids = [check_group_id(g) for g in groups] if groups else [self.project_id]
        hits = await self.fresh.search(query, group_ids=group_ids, kinds=kinds or None,
                                       limit=limit)
        return [_found(hit.episode, hit.score) for hit in hits]

    async def add_memory(
        self,
        kind: Annotated[MemoryKind, Field(
            description="gotcha: a trap to avoid; pattern: a way of doing things that works "
            "here; discovery: what a file is for; outcome: how a task went; decision: an "
            "architecture decision in force.")],
        text: Annotated[str, Field(
            description="The memory itself: the gotcha or pattern, what the file is for, how "
            "the task went, or what was decided.")],
        file: Annotated[str | None, Field(
            description="discovery: the file's path (required for a discovery).")] = None,
        task_id: Annotated[str | None, Field(
            description="outcome: the task's id (required for an outcome).")] = None,
        success: Annotated[bool | None, Field(
            description="outcome: whether the task succeeded (required for an outcome).")] = None,
        title: Annotated[str | None, Field(
            description="decision: its title (required for a decision); outcome: a short "
            "description of the task.")] = None,
        decision_id: Annotated[str | None, Field(
            description="decision: its ADR id, e.g. ADR-0007 (default: the next ADR-NNNN); "
            "recording the same id again replaces it.")] = None,
        spec: Spec = None,
    ) -> SavedMemory:
        """Remember something for later sessions of this project. Saving the same gotcha,
        pattern, file, task or decision again updates it instead of adding a duplicate."""
        memory = self._memory(spec)
        if kind == GOTCHA:
            return _saved(await memory.add_gotcha(text))
        if kind == PATTERN:
            return _saved(await memory.add_pattern(text))
        if kind == "discovery":
            if not (file and file.strip()):
                raise InvalidEpisode("a discovery needs file: the path it is about")
            return _saved((await memory.add_codebase_discoveries({file: text}))[0])
        if kind == "outcome":
            if not task_id or success is None:
                raise InvalidEpisode("an outcome needs task_id and success")
            return _saved(await memory.add_task_outcome(task_id, success, text,
                                                        description=title or ""))
        if not title:
            raise InvalidEpisode("a decision needs a title")
        adr = await record_adr(self.store, self.project_id,
                               Adr(adr_id=decision_id or await next_adr_id(self.store,
                                                                           self.project_id),
                                   title=title, decision=text))
        group = project_group(self.project_id)
        return SavedMemory(id=stable_id(group, ADR, adr.adr_id), group_id=group, kind=ADR,
                           name=f"{adr.adr_id}: {adr.title}")

    async def get_task_context(
        self,
        task: Annotated[str, Field(description="What the task is, in a sentence or two.")],
        task_type: TaskTypeArg = "implementation",
        complexity: Complexity = 5,
        phase: Annotated[Phase, Field(description="The phase of work.")] = Phase.IMPLEMENT,
        task_id: Annotated[str, Field(description="The task's id.")] = "TASK",
        feature: Annotated[str | None, Field(
            description="The feature (spec) the task belongs to.")] = None,
        tech_stack: Annotated[str | None, Field(
            description="The tech stack, to find its patterns.")] = None,
        refinement: Annotated[int, Field(
            ge=0, description="Which retry this is (0: a first attempt).")] = 0,
        last_failure: Annotated[str | None, Field(
            description="How the previous attempt failed.")] = None,
        autobuild: Annotated[bool, Field(description="A player-coach run.")] = False,
        actor: Annotated[Literal["player", "coach"], Field(
            description="With autobuild: who works this turn.")] = "player",
        turn: Annotated[int, Field(ge=0, description="With autobuild: the turn number.")] = 0,
        groups: Annotated[list[str] | None, Field(
            description="More groups to read besides the project's own.")] = None,
        tokens: Annotated[int | None, Field(
            ge=0, description="The token budget (default: computed from the task).")] = None,
        files: Annotated[list[str] | None, Field(
            description="Files the task works on, relative to the project folder: what "
            "memory says of them and their area joins the context.")] = None,
        spec: Annotated[str | None, Field(
            description="The spec (feature) the task belongs to.")] = None,
        isolated: Annotated[bool, Field(
            description="With spec: leave other specs' memories out of this context "
            "(default: every spec's memories may enter).")] = False,
        infer_areas: Annotated[bool, Field(
            description="The configured LLM names the areas of the project the task touches: "
            "their conventions join the context (one bounded call; needs an LLM).")] = False,
    ) -> TaskContext:
        """The memories a task needs, as Markdown within a token budget: relevant patterns,
        warnings, architecture, similar past outcomes, turn history, role constraints,
        quality gates and the suggested implementation mode."""
        if infer_areas and self.guess_areas is None:
            raise ConfigError("infer_areas needs an LLM: dualmem config set llm "
                              "[NAME:]MODEL[@URL]")
        described = Task(
            id=task_id, description=task, task_type=task_type, complexity=complexity,
            tech_stack=tech_stack, feature_id=feature, refinement_attempt=refinement,
            last_failure_type=last_failure, is_autobuild=autobuild, current_actor=actor,
            turn_number=turn, files=tuple(working_set(
                Path(project_folder(self.home, None)), given=files or (), prompt=task, git=False)),
            spec=spec, isolation="spec" if isolated else "project",
        )
        result = await build_context(
            self.store, described, project_id=self.project_id, phase=phase, tokens=tokens,
            overrides=self._overrides(),
            extra_groups=[check_group_id(g) for g in groups or ()],
            guess_areas=self.guess_areas if infer_areas else None,
        )
        return TaskContext.model_validate(result.to_json())

    async def get_critical_context(
        self,
        task: Annotated[str, Field(
            description="What the task is; failures and decisions relevant to it come first.")]
        = "",
        task_type: TaskTypeArg = "feature",
        complexity: Complexity = 5,
        role: Annotated[Literal["player", "coach"], Field(
            description="Whose constraints to give.")] = "player",
        feature: Annotated[str | None, Field(
            description="Feature work: the feature whose overview to give.")] = None,
    ) -> CriticalContextData:
        """What you must know before starting: your role's constraints, the quality gates for
        the task, the architecture decisions in force, known failures to avoid, and the
        feature's overview. Not budgeted: read it all."""
        found = await load_critical_context(
            self.store, self.project_id, task=task, task_type=task_type, complexity=complexity,
            role=role, feature_id=feature, overrides=self._overrides(),
        )
        return CriticalContextData.model_validate(found.to_json())

    async def save_session_insights(
        self,
        what_worked: Annotated[tuple[str, ...], Field(description="What worked.")] = (),
        what_failed: Annotated[tuple[str, ...], Field(description="What failed.")] = (),
        patterns_found: Annotated[tuple[str, ...], Field(
            description="Patterns worth repeating.")] = (),
        gotchas_encountered: Annotated[tuple[str, ...], Field(
            description="Traps met on the way.")] = (),
        files_understood: Annotated[dict[str, str] | None, Field(
            description="What files are for: {path: description}.")] = None,
        subtasks_completed: Annotated[tuple[str, ...], Field(
            description="The subtasks done.")] = (),
        recommendations_for_next_session: Annotated[tuple[str, ...], Field(
            description="What the next session should do.")] = (),
        session_number: Annotated[int | None, Field(
            ge=0, description="The session's number (default: one past the highest stored; "
            "two sessions saving at the same moment should each pass their own).")] = None,
        spec: Spec = None,
    ) -> SavedSession:
        """Save what this session learned: stored as a session insight plus one memory per
        pattern, gotcha and file, and the session's outcome. Saving the same session number
        again updates it."""
        memory = self._memory(spec)
        if session_number is None:
            latest = await memory.get_session_history(1)
            number = latest[0].get("session_number") if latest else None
            session_number = number + 1 if isinstance(number, int) else 1
        insights: dict[str, Any] = {
            "subtasks_completed": list(subtasks_completed),
            "discoveries": {"files_understood": files_understood or {},
                            "patterns_found": list(patterns_found),
                            "gotchas_encountered": list(gotchas_encountered)},
            "what_worked": list(what_worked), "what_failed": list(what_failed),
            "recommendations_for_next_session": list(recommendations_for_next_session),
        }
        saved = await memory.save_session_insights(session_number, insights)
        return SavedSession(session_number=session_number,
                            saved=dict(Counter(episode.kind for episode in saved)))

    async def get_session_history(
        self,
        limit: Annotated[int, Field(ge=1, le=50, description="At most this many.")] = 5,
        spec: Spec = None,
    ) -> list[dict[str, Any]]:
        """The latest sessions' insights, newest first: what worked, what failed, what was
        recommended next."""
        return await self._memory(spec).get_session_history(limit)

    async def get_latest_turn(
        self,
        feature_id: Annotated[str, Field(description="The feature of the player-coach run.")],
        task_id: Annotated[str | None, Field(description="Only this task's turns.")] = None,
    ) -> TurnState | None:
        """The newest turn state of a player-coach run (the coach's decision and feedback,
        blockers, progress), or null when none is recorded."""
        return await latest_turn(self.store, self.project_id, feature_id, task_id)

    async def get_role_constraints(
        self,
        role: Annotated[str, Field(description="The role: player or coach.")],
    ) -> RoleConstraints:
        """What a role must do, must not do, asks before doing and escalates (system knowledge
        with this project's overrides)."""
        return await resolve_role_constraints(role, self.store, self._overrides())

    async def get_quality_gates(
        self, task_type: TaskTypeArg, complexity: Complexity
    ) -> QualityGateProfile:
        """The quality-gate thresholds for a task: architecture review and coverage
        thresholds, whether tests are required."""
        return await gate_thresholds(task_type, complexity, self.store,
                                     self._overrides())

    async def suggest_implementation_mode(
        self, task_type: TaskTypeArg, complexity: Complexity
    ) -> ModeAdvice:
        """The implementation mode to use for a task (direct, task_work or autobuild), with
        how to run it, its pitfalls and why it was chosen."""
        advice = await suggest_implementation_mode(task_type, complexity, self.store,
                                                   self._overrides())
        return ModeAdvice(mode=advice.mode, task_type=advice.task_type,
                          complexity=advice.complexity, reason=advice.reason)

    async def get_knowledge_gaps(
        self,
        focus: Annotated[KnowledgeCategory | None, Field(
            description="One category only (default: all).")] = None,
        max_questions: Annotated[int, Field(
            ge=1, le=50, description="At most this many questions.")] = 10,
    ) -> list[KnowledgeGap]:
        """What this project's memory lacks, by category, with the question that fills each
        gap (most important first). Ask the user, then store the answer with
        capture_knowledge."""
        return await analyze_gaps(self.store, self.project_id, focus, max_questions)

    async def capture_knowledge(
        self,
        category: Annotated[KnowledgeCategory, Field(description="The gap's category.")],
        question: Annotated[str, Field(description="The question that was asked.")],
        answer: Annotated[str, Field(description="The user's answer, as given.")],
    ) -> CapturedKnowledge:
        """Store the user's answer to a knowledge-gap question, for every later session."""
        return await capture_knowledge(self.store, self.project_id, category, question, answer)

    async def view(self, group: str, page: str) -> str:
        """A group's ``patterns.md`` or ``gotchas.md``, rendered from what the store holds."""
        return (await render_pages(self.store, [check_group_id(group)]))[page]

    def tools(self) -> Sequence[Any]:
        """The methods published as MCP tools, in the order an agent reads them."""
        return (
            self.search_memories, self.add_memory, self.get_task_context,
            self.get_critical_context,
            self.save_session_insights, self.get_session_history, self.get_latest_turn,
            self.get_role_constraints, self.get_quality_gates, self.suggest_implementation_mode,
            self.get_knowledge_gaps, self.capture_knowledge,
        )
