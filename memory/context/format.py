"""Rendering of a context as Markdown: the header, a titled section per category, and the
blocks inside a section. A block is the unit that is kept or dropped when trimming to budget;
a memory's block may also be clipped (its detail shortened) to fit what is left."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from backends.model import Episode
from memory.agent.outcomes import TaskOutcome
from memory.agent.turns import TurnState
from memory.context.budget import Category
from seeds import ModeSuggestion, QualityGateProfile, RoleConstraints

MAX_DETAIL_CHARS = 600  # a long memory is summarised by its start; the store keeps the rest
ELLIPSIS = "…"
# Bookkeeping fields of structured memories that tell an agent nothing about the task (and
# would make the same pattern recorded in two specs read as two).
_OMITTED = frozenset({"created_at", "first_seen", "last_seen", "recorded_at", "invalid_at",
                      "spec", "session"})
_SPACE = re.compile(r"\s+")

C = Category
TITLES: Mapping[Category, tuple[str, str]] = {
    C.FEATURE: ("Feature context", "Requirements and success criteria for this feature."),
    C.SIMILAR_OUTCOMES: ("What worked for similar tasks", "How similar tasks went, and why."),
    C.PATTERNS: ("Recommended patterns", "Patterns from this codebase that apply here."),
    C.ARCHITECTURE: ("Architecture context", "How this fits into the system."),
    C.WARNINGS: ("Warnings from past experience",
                 "Traps of this codebase and approaches that failed before: avoid them."),
    C.DOMAIN: ("Domain context", "Terms and concepts of the domain."),
    C.ROLE_CONSTRAINTS: ("Role constraints", "Boundaries of your role: do not cross them."),
    C.QUALITY_GATES: (
        "Quality-gate thresholds", "Use these thresholds; do not adjust them mid-session."
    ),
    C.TURN_STATES: ("Previous turns", "What earlier turns did and why the coach sent them back."),
    C.IMPLEMENTATION_MODES: ("Implementation mode", "How to carry out this task."),
}


@dataclass(frozen=True)
class Block:
    """Markdown ending in a newline. ``order`` places it in its section (blocks are chosen by
    priority, shown by order); text from ``clip_from`` on may be shortened to fit."""

    text: str
    order: int = 0
    clip_from: int | None = None
    shows: Episode | None = None
    """the memory it shows, if it shows one"""

    def clipped(self, chars: int) -> Block:
        """This block with its clippable text cut to ``chars`` characters and an ellipsis."""
        assert self.clip_from is not None
        end = self.clip_from + chars
        return replace(self, text=self.text[:end].rstrip() + ELLIPSIS + "\n")


def one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def header(task_id: str, used: int, total: int, summary: str) -> str:
    return (
        f"## Job-specific context: {one_line(task_id)}\n\n"
        f"Budget used: {used}/{total} tokens. {summary}\n\n"
    )


SECTION_END = "\n"


def section_head(category: Category, subject: str = "") -> str:
    title, intro = TITLES[category]
    suffix = f": {subject}" if subject else ""
    return f"### {title}{suffix}\n\n*{intro}*\n\n"


def _value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "; ".join(_value(v) for v in value if v not in (None, "", [], {}))
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_value(v)}" for k, v in value.items() if v not in (None, ""))
    return str(value)


def detail(episode: Episode) -> str:
    """A one-line summary of a memory: its structured fields, or its text."""
    data = episode.data
    if isinstance(data, dict):
        parts = (
            f"{key.replace('_', ' ')}: {_value(value)}"
            for key, value in data.items()
            if value not in (None, "", [], {}, episode.name) and key not in _OMITTED
        )
        text = one_line("; ".join(parts))
    else:
        text = one_line(episode.body[: 4 * MAX_DETAIL_CHARS])  # no need to fold a whole megabyte
    return text


def _bullet(title: str, text: str, order: int) -> Block:
    """``- **title**: text`` (or ``- text``) on one line, the text capped and clippable."""
    lead = f"- **{one_line(title)}**" if title else "-"
    if not text:
        return Block(lead + "\n", order)
    lead += ": " if title else " "
    if len(text) > MAX_DETAIL_CHARS:
        text = text[:MAX_DETAIL_CHARS].rstrip() + ELLIPSIS
    return Block(f"{lead}{text}\n", order, clip_from=len(lead))


def episode_block(episode: Episode, order: int) -> Block:
    text = detail(episode)
    name = one_line(episode.name)
    if text.startswith(name.removesuffix(ELLIPSIS)):
        return _bullet("", text, order)  # the name is the text's first line: say it once
    return _bullet(name, text, order)


def _list_block(label: str, items: Iterable[str], order: int) -> Block | None:
    lines = [f"- {one_line(item)}\n" for item in items if item.strip()]
    return Block(f"**{label}:**\n" + "".join(lines) + "\n", order) if lines else None


def role_blocks(constraints: RoleConstraints) -> list[Block]:
    """Must, must not, ask before, escalate when: one block each, in that order."""
    lists = (
        ("Must", constraints.must_do),
        ("Must not", constraints.must_not_do),
        ("Ask before", constraints.ask_before),
        ("Escalate when", constraints.escalate_when),
    )
    blocks = (_list_block(label, items, i) for i, (label, items) in enumerate(lists))
    return [b for b in blocks if b is not None]


def gate_block(profile: QualityGateProfile) -> Block:
    low, high = profile.complexity
    arch = (
        f"required, score at least {profile.arch_review_threshold}"
        if profile.arch_review_required else "not required"
    )
    coverage = (
        f"required, at least {percent(profile.coverage_threshold)}"
        if profile.coverage_required and profile.coverage_threshold is not None
        else "not required"
    )
    tests = "not required"
    if profile.tests_required:
        tests = "required, must pass" if profile.tests_must_pass else "required"
    since = f" (in effect from {profile.effective_from})" if profile.effective_from else ""
    return Block(
        f"**{profile.task_type}, complexity {low}-{high}** ({profile.key}){since}:\n"
        f"- Architecture review: {arch}\n- Coverage: {coverage}\n- Tests: {tests}\n"
    )


def percent(fraction: float) -> str:
    """A threshold stored as a fraction, as people read it: 0.85 -> "85%", 0.875 -> "87.5%"."""
    return f"{round(fraction * 100, 2):g}%"


def mode_blocks(suggestion: ModeSuggestion) -> list[Block]:
    """One block per line of the suggestion's advice, most important first."""
    return [Block(f"- {line}\n", i) for i, line in enumerate(suggestion.text.splitlines()) if line]


def turn_block(state: TurnState, order: int) -> Block:
    """A previous turn: the coach's verdict and feedback first (what the next turn must act
    on, and what survives clipping), then progress, blockers and criteria."""
    parts = [f"Coach {state.coach_decision or 'pending'}"]
    if state.coach_feedback and state.coach_decision != "approve":
        parts.append(f"Feedback: {state.coach_feedback}")
    if state.progress_summary:
        parts.append(f"Progress: {state.progress_summary}")
    if state.blockers:
        parts.append(f"Blockers: {_value(state.blockers)}")
    if state.acceptance_criteria:
        parts.append(f"Criteria: {_value(state.acceptance_criteria)}")
    text = one_line(" ".join(p.rstrip(". ") + "." for p in parts))
    return _bullet(f"Turn {state.turn} ({state.task_id})", text, order)


def turn_context(state: TurnState, current_turn: int) -> str:
    """FEAT-GE-001's "Previous Turn Context" for the coach: the turn a task's turn
    ``current_turn`` starts from, as the design injects it."""
    criteria = ", ".join(f"{k}: {v}" for k, v in state.acceptance_criteria_status.items())
    blockers = "; ".join(state.blockers_found) or "None"
    decision = (state.coach_decision or "pending").upper()
    lines = [
        f"### Previous Turn Context (Turn {state.turn_number} of {current_turn})\n",
        one_line(state.player_decision) if state.player_decision else "",
        f"Progress: {one_line(state.progress_summary)}" if state.progress_summary else "",
        f"AC status: {{{criteria}}}" if criteria else "",
        f"Blockers: {one_line(blockers)}",
        f"Coach decision: {decision}"
        + (f" — {one_line(state.coach_feedback)}" if state.coach_feedback else ""),
    ]
    return "\n".join(line for line in lines if line) + "\n" + SECTION_END


def outcome_block(record: TaskOutcome, order: int) -> Block:
    verdict = "succeeded" if record.success else "failed"
    turns = f" in {record.turns} turn{'s' if record.turns > 1 else ''}" if record.turns else ""
    text = one_line("; ".join(filter(None, (record.description, record.outcome))))
    return _bullet(f"{record.task_id or 'A task'} {verdict}{turns}", text, order)


def section(category: Category, blocks: Iterable[Block], subject: str = "") -> str:
    return section_head(category, subject) + "".join(b.text for b in blocks) + SECTION_END
