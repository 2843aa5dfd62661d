"""A realistic coding project's memories (files and what they are for, gotchas, patterns, task
outcomes, turn states, ADRs with supersession, session notes) and questions whose relevant
memories share an entity with the question but few words, and questions about what is true now.
``bench.coding`` measures every layer on it; the graph tests use it as a project of some size.

Kinds of question (relevant memories in brackets):

- component: "What goes wrong with `InvoiceBuilder`?" [the gotchas of the file that defines
  it, which name the file, not the class: one fact away, via the file's discovery];
- file: "Any conventions for src/billing/invoice.py?" [the patterns of the class the file
  defines: one fact away];
- feature: "What happened on feature F-billing-2 so far?" [the outcomes of its tasks, which
  name the task; the turn states link feature -> task];
- now: "What is the current decision on session storage?" [the ADR in force, not the one it
  superseded].

Generated from a fixed seed: the same memories and questions on every run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from backends.model import Episode

GROUP = "shop"
SEED = 15
MODULES = {
    "billing": ("invoice", "ledger", "tax"), "auth": ("session", "token", "password"),
    "search": ("indexer", "query", "ranker"), "storage": ("blob", "cache", "migrations"),
    "api": ("routes", "schemas", "throttle"), "ui": ("dashboard", "forms", "theme"),
    "mail": ("templates", "outbox", "bounce"), "jobs": ("scheduler", "worker", "retry"),
}
ROLES = ("Builder", "Store", "Manager", "Client", "Engine", "Registry")
PURPOSES = (
    "turns raw rows into documents", "keeps the state between requests",
    "owns the lifecycle of the records", "talks to the upstream service",
    "computes the figures shown to users", "wires the handlers at start-up",
)
SYMPTOMS = (
    "leaks file handles when a request is cancelled half-way",
    "silently drops rows once the batch passes ten thousand",
    "deadlocks under pytest-xdist because two fixtures share one connection",
    "returns stale values for about a minute after a deploy",
    "crashes on naive datetimes coming from the legacy importer",
    "doubles every charge when the webhook is retried",
    "times out on cold caches; warm it before the benchmark",
    "breaks when the locale is not en_US",
    "blocks the event loop while it compresses large payloads",
)
HABITS = (
    "always construct it through the factory so that settings are injected",
    "pass explicit timeouts; the defaults are unbounded",
    "keep it free of I/O so that unit tests stay fast",
    "log with the request id so traces can be stitched",
    "prefer small immutable value objects over dictionaries",
    "never share one instance between threads",
)
NOTES = (
    "Spent the session reading the code base and sketching the plan.",
    "Paired on the flaky test; it turned out to be ordering in the fixture teardown.",
    "Reviewed the open pull requests and left comments about naming.",
    "Upgraded the linter and fixed the new warnings it raised.",
    "Wrote the release notes and tagged the version.",
    "Investigated the slow CI job; caching the dependencies halved it.",
)
DECISIONS = (
    ("session storage", "Sessions in signed cookies", "Sessions in Redis"),
    ("search engine", "Search with Postgres full-text", "Search with a dedicated index"),
    ("task queue", "Jobs on cron", "Jobs on a durable queue"),
    ("email delivery", "Mail through SMTP", "Mail through the provider's HTTP API"),
    ("file storage", "Blobs on local disk", "Blobs in object storage"),
    ("API versioning", "Versions in the URL", "Versions in a header"),
)


@dataclass(frozen=True)
class Question:
    kind: str
    text: str
    relevant: frozenset[str]


@dataclass(frozen=True)
class Project:
    memories: list[Episode]
    questions: list[Question]


def _camel(word: str, role: str) -> str:
    return word.capitalize() + role


def project(seed: int = SEED) -> Project:
    rng = random.Random(seed)
    start = datetime(2025, 1, 6, 9, tzinfo=UTC)
    clock = iter(start + timedelta(hours=5 * n) for n in range(10_000))
    memories: list[Episode] = []
    questions: list[Question] = []

    def add(kind: str, name: str, body: object, key: str, **fields: object) -> Episode:
        episode = Episode.create(group_id=GROUP, kind=kind, name=name, body=body,  # type: ignore[arg-type]
                                 key=key, created_at=next(clock), **fields)
        memories.append(episode)
        return episode

    for domain, modules in MODULES.items():
        for module in modules:
            path = f"src/{domain}/{module}.py"
            component = _camel(module, rng.choice(ROLES))
            add("codebase_discovery", path, {
                "file": path, "description": f"Defines `{component}`, which "
                                             f"{rng.choice(PURPOSES)}"}, path)
            gotchas = [add("gotcha", f"{path} {symptom[:40]}", f"{path} {symptom}",
                           f"g {path} {n}")
                       for n, symptom in enumerate(rng.sample(SYMPTOMS, 3))]
            patterns = [add("pattern", f"{component}: {habit[:40]}", f"`{component}`: {habit}",
                            f"p {component} {n}")
                        for n, habit in enumerate(rng.sample(HABITS, 2))]
            questions.append(Question("component", f"What goes wrong with {component}?",
                                      frozenset(e.id for e in gotchas)))
            questions.append(Question("file", f"Any conventions to follow in {path}?",
                                      frozenset(e.id for e in patterns)))
        for number in range(1, 3):
            feature = f"F-{domain}-{number}"
            outcomes = []
            for task_number in range(3):
                task = f"T-{domain[:3]}{number}{task_number}"
                files = [f"src/{domain}/{m}.py" for m in rng.sample(modules, 2)]
                success = rng.random() < 0.6
                outcomes.append(add(
                    "task_outcome", f"{task} {'succeeded' if success else 'failed'}",
                    {"task_id": task, "success": success,
                     "outcome": "merged" if success else rng.choice(SYMPTOMS),
                     "metadata": {"files_modified": files}}, task))
                add("turn_state", f"turn {feature} {task}",
                    {"feature_id": feature, "task_id": task, "turn": 1,
                     "progress_summary": "work under way"}, f"TURN-{feature}-{task}-T1")
            questions.append(Question("feature", f"What happened on {feature} so far?",
                                      frozenset(e.id for e in outcomes)))
    for n, (topic, old_title, new_title) in enumerate(DECISIONS):
        old_id, new_id = f"ADR-{2 * n + 1:03d}", f"ADR-{2 * n + 2:03d}"
        old_at, new_at = next(clock), next(clock)
        memories.append(Episode.create(
            group_id=GROUP, kind="adr", name=f"{old_id}: {old_title}", key=old_id,
            body={"adr_id": old_id, "title": old_title, "decision": f"{old_title} for {topic}",
                  "status": "superseded", "superseded_by": new_id},
            created_at=old_at, invalid_at=new_at))
        current = Episode.create(
            group_id=GROUP, kind="adr", name=f"{new_id}: {new_title}", key=new_id,
            body={"adr_id": new_id, "title": new_title, "decision": f"{new_title} for {topic}",
                  "supersedes": old_id}, created_at=new_at)
        memories.append(current)
        questions.append(Question("now", f"What is the current decision on {topic}?",
                                  frozenset([current.id])))
    for n in range(100):
        add("session_insight", f"session {n}", rng.choice(NOTES), f"session {n}")
    return Project(memories, questions)
