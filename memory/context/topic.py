"""What a task or a prompt is about: its words without the action verbs. A module of its own
(no pydantic) because every prompt hook needs it and nothing else of task analysis."""

from __future__ import annotations

import re

# Words that say what kind of task it is, not what it is about (see ``topic``).
TASK_VERBS = frozenset({
    "add", "build", "change", "create", "debug", "document", "fix", "implement", "improve",
    "make", "refactor", "remove", "rename", "review", "rewrite", "support", "update", "write",
})
_NOT_WORD = re.compile(r"\W+")


def topic(description: str) -> str:
    """The description without its action verbs: "implement", "fix", "review" say what kind
    of task it is (the task type carries that), not what it is about, and matching them alone
    would bring in every memory of unrelated work that was once implemented or fixed."""
    words = [w for w in description.split() if _NOT_WORD.sub("", w.casefold()) not in TASK_VERBS]
    return " ".join(words) or description
