"""Per-project overrides of system knowledge, in FEAT-GE-001's file or ours.

The design's file (``.guardkit/config/entity-overrides.yaml`` in the project)::

    role_constraints:
      coach:
        must_do_additions: [Verify OPG registration compliance]
        escalate_when_additions: [Financial data handling inconsistency detected]
    quality_gate_configs:
      feature:
        overrides:
          - complexity_range: [4, 6]
            coverage_threshold: 0.85

Ours (``<home>/entity-overrides.yaml``) says the same with ``roles:`` and a range per key::

    roles:
      player:
        must_do_additions: [Run the linters before handing over]
    quality_gates:
      feature:
        "4-6": {coverage_threshold: 0.75, arch_review_threshold: 55}

FEAT-GE-001 also makes ``.guardkit/config/quality-gates.yaml`` the authoritative thresholds:
a list of ``QualityGateConfigEpisode`` entries (under ``profiles:``, or the list alone), each
replacing the fields it names in the profile of its task type and range::

    profiles:
      - task_type: feature
        complexity_range: [4, 6]
        coverage_threshold: 0.95

``seeds/data/entity-overrides.yaml.example`` is a documented example of the overrides file.

A file may use either spelling, or both. ``*_additions`` extend a role's lists (they never
replace them); a quality-gate entry replaces the fields it names in the profile whose
complexity range it names. Thresholds are fractions (0.85 is 85 %); a value that cannot be one
is an error naming its key. Overrides apply on top of whatever knowledge is in force (stored,
else built-in), so they always win.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import yaml  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, ValidationError

from backends.errors import FileRefused
from backends.model import problems
from backends.safe_files import MiB, read_regular
from seeds.knowledge import (
    Fraction,
    KnowledgeError,
    QualityGateProfile,
    Range,
    RoleConstraints,
    SystemKnowledge,
)

OVERRIDES_FILE = "entity-overrides.yaml"
DESIGN_OVERRIDES = Path(".guardkit", "config", OVERRIDES_FILE)
"""Where FEAT-GE-001 puts a project's overrides, relative to the project's folder."""
DESIGN_GATES = Path(".guardkit", "config", "quality-gates.yaml")
"""Where FEAT-GE-001 keeps a project's authoritative quality-gate thresholds."""
OVERRIDES_LIMIT = 1 * MiB
"""the largest overrides file read: a project's are a few dozen lines"""
MAX_DEPTH = 32
"""the deepest nesting read: overrides go five levels deep"""


class RoleAdditions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    must_do_additions: tuple[str, ...] = ()
    must_not_do_additions: tuple[str, ...] = ()
    ask_before_additions: tuple[str, ...] = ()
    escalate_when_additions: tuple[str, ...] = ()

    def apply(self, role: RoleConstraints) -> RoleConstraints:
        changes = {}
        for field in ("must_do", "must_not_do", "ask_before", "escalate_when"):
            items: tuple[str, ...] = (*getattr(role, field), *getattr(self, f"{field}_additions"))
            changes[field] = tuple(dict.fromkeys(items))  # an item said twice is said once
        return role.model_copy(update=changes)


class GateOverride(BaseModel):
    """Only the fields given are replaced (``null`` is a value: "not checked")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arch_review_required: bool | None = None
    arch_review_threshold: int | None = None
    coverage_required: bool | None = None
    coverage_threshold: Fraction | None = None
    tests_required: bool | None = None
    tests_must_pass: bool | None = None
    effective_from: str | None = None

    def given(self) -> set[str]:
        """The profile fields this override names."""
        return self.model_fields_set - {"complexity_range"}

    def apply(self, profile: QualityGateProfile) -> QualityGateProfile:
        data = profile.model_dump() | self.model_dump(include=self.given())
        try:
            return QualityGateProfile.model_validate(data)
        except ValidationError as exc:
            detail = problems(exc)
            raise KnowledgeError(f"override of {profile.key} is not valid: {detail}") from None


class RangedGateOverride(GateOverride):
    """One entry of the design's ``overrides:`` list: the range it names, and its fields."""

    complexity_range: Range


class GateProfileEntry(RangedGateOverride):
    """One profile of the quality-gates file: a ``QualityGateConfigEpisode`` as written."""

    task_type: str
    entity_type: Literal["quality_gate_config"] | None = None

    def given(self) -> set[str]:
        return super().given() - {"task_type", "entity_type"}


class GatesFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    profiles: tuple[GateProfileEntry, ...] = ()

    def overrides(self) -> Overrides:
        by_type: dict[str, list[RangedGateOverride]] = {}
        for entry in self.profiles:
            fields = entry.model_dump(include=entry.given())
            by_type.setdefault(entry.task_type, []).append(
                RangedGateOverride(complexity_range=entry.complexity_range, **fields))
        return Overrides(quality_gate_configs={
            task_type: TaskTypeOverrides(overrides=tuple(entries))
            for task_type, entries in by_type.items()
        })


class TaskTypeOverrides(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    overrides: tuple[RangedGateOverride, ...] = ()


class Overrides(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role_constraints: dict[str, RoleAdditions] = {}
    quality_gate_configs: dict[str, TaskTypeOverrides] = {}
    roles: dict[str, RoleAdditions] = {}
    """ours: ``role_constraints`` by another name"""
    quality_gates: dict[str, dict[str, GateOverride]] = {}
    """ours: a range per key (``"4-6"``) instead of the design's list"""

    def _roles(self) -> Iterator[tuple[str, RoleAdditions]]:
        yield from self.role_constraints.items()
        yield from self.roles.items()

    def _gates(self) -> Iterator[tuple[str, tuple[int, int], str, GateOverride]]:
        """(task type, range, how the file named it, override), the design's entries first."""
        for task_type, listed in self.quality_gate_configs.items():
            for entry in listed.overrides:
                low, high = entry.complexity_range
                yield task_type, entry.complexity_range, f"{low}-{high}", entry
        for task_type, by_range in self.quality_gates.items():
            for named_range, override in by_range.items():
                yield task_type, _parse_range(named_range), named_range, override

    def apply(self, knowledge: SystemKnowledge) -> SystemKnowledge:
        """``knowledge`` with these overrides on top. A role unknown to it is created from its
        additions (a project may have roles of its own); a gate range that names no profile is
        an error, since it is almost surely a typo."""
        roles = dict(knowledge.roles)
        for name, additions in self._roles():
            roles[name] = additions.apply(roles.get(name) or RoleConstraints(role=name))
        gates = {(gate.task_type, gate.complexity): gate for gate in knowledge.gates}
        for task_type, complexity, named, override in self._gates():
            canonical = knowledge.task_type_aliases.get(task_type, task_type)
            where = (canonical, complexity)
            if where not in gates:
                known = sorted(f"{t}-{lo}-{hi}" for t, (lo, hi) in gates)
                raise KnowledgeError(
                    f"override names QG-{canonical}-{named}, which is no profile; "
                    f"profiles: {', '.join(known)}"
                )
            gates[where] = override.apply(gates[where])
        return knowledge.model_copy(update={"roles": roles, "gates": tuple(gates.values())})

    def __or__(self, later: Overrides) -> Overrides:
        """Both files' overrides, ``later`` applied after ``self``: role additions add up, and
        for a field of a profile that both name, ``later`` wins."""
        roles: dict[str, RoleAdditions] = {}
        for name, additions in [*self._roles(), *later._roles()]:
            before = roles.get(name, RoleAdditions())
            roles[name] = RoleAdditions(**{
                field: (*getattr(before, field), *getattr(additions, field))
                for field in RoleAdditions.model_fields
            })
        gates: dict[str, list[RangedGateOverride]] = {}
        for task_type, complexity, _, override in [*self._gates(), *later._gates()]:
            fields = override.model_dump(include=override.given())
            gates.setdefault(task_type, []).append(
                RangedGateOverride(complexity_range=complexity, **fields)
            )
        return Overrides(
            role_constraints=roles,
            quality_gate_configs={
                task_type: TaskTypeOverrides(overrides=tuple(entries))
                for task_type, entries in gates.items()
            },
        )


def _parse_range(text: str) -> tuple[int, int]:
    low, sep, high = str(text).partition("-")
    try:
        if sep:
            return int(low), int(high)
    except ValueError:
        pass
    raise KnowledgeError(f"a quality-gate override names a range as LOW-HIGH, not {text!r}")


def load_gates_file(path: Path) -> Overrides:
    """FEAT-GE-001's quality-gates file (see the module docstring) as overrides; none when it
    is missing. ``KnowledgeError`` as ``load_overrides``."""
    return load_overrides(path, missing_ok=True, gates_file=True)


def load_overrides(
    path: Path, *, missing_ok: bool = False, follow: bool = True, gates_file: bool = False,
) -> Overrides:
    """The overrides in ``path``; no overrides when it is missing and ``missing_ok``.
    ``follow=False`` refuses a symbolic link (a home's own file). ``KnowledgeError`` names the
    file and what is wrong with it: not a regular file, over ``OVERRIDES_LIMIT``, not UTF-8,
    nested deeper than ``MAX_DEPTH``, not YAML, or not overrides."""
    try:
        raw = read_regular(path, limit=OVERRIDES_LIMIT, follow=follow)
    except FileNotFoundError:
        if missing_ok:
            return Overrides()
        raise KnowledgeError(f"{path}: no such overrides file") from None
    except FileRefused as exc:
        raise KnowledgeError(f"{path}: not a valid overrides file: {exc.reason}") from None
    except OSError as exc:
        raise KnowledgeError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KnowledgeError(f"{path}: not a valid overrides file: not UTF-8 (byte "
                             f"{raw[exc.start]:#04x} at offset {exc.start})") from None
    try:
        _check_depth(text)
        data = yaml.safe_load(text) or {}
        if gates_file:
            return GatesFile.model_validate(
                {"profiles": data} if isinstance(data, list) else data).overrides()
        return Overrides.model_validate(data)
    except (yaml.YAMLError, ValidationError, KnowledgeError) as exc:
        detail = problems(exc) if isinstance(exc, ValidationError) else exc
        raise KnowledgeError(f"{path}: not a valid overrides file: {detail}") from None


def _check_depth(text: str) -> None:
    """``KnowledgeError`` for YAML nested deeper than ``MAX_DEPTH``, found by walking the
    parser's events (which takes no recursion), before the loader, which recurses once per
    level and overflows Python's stack at about a thousand."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise KnowledgeError(f"nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
