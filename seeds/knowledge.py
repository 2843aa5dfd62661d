"""System knowledge as typed values: role constraints, quality-gate profiles, implementation
modes, and the rules that pick one for a task.

The built-in defaults are the YAML files in ``seeds/data``. Seeding writes them and the hard
fallback reads them, so a store that was never seeded answers exactly like a seeded one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Annotated, Any, ClassVar, Literal

import orjson
import yaml  # type: ignore[import-untyped]
from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from backends.errors import DualmemError
from backends.model import Episode
from seeds.groups import (
    IMPLEMENTATION_MODE,
    IMPLEMENTATION_MODE_GROUP,
    QUALITY_GATE_CONFIG,
    QUALITY_GATE_GROUP,
    ROLE_CONSTRAINTS,
    ROLE_CONSTRAINTS_GROUP,
)

MIN_COMPLEXITY, MAX_COMPLEXITY = 1, 10


class KnowledgeError(DualmemError, ValueError):
    """A role, task, complexity, data file or override that the system knowledge cannot use."""


def check_complexity(complexity: int) -> int:
    if isinstance(complexity, bool) or not isinstance(complexity, int) or not (
        MIN_COMPLEXITY <= complexity <= MAX_COMPLEXITY
    ):
        raise KnowledgeError(
            f"complexity must be a whole number from {MIN_COMPLEXITY} to {MAX_COMPLEXITY}, "
            f"not {complexity!r}"
        )
    return complexity


def _check_range(value: tuple[int, int]) -> tuple[int, int]:
    low, high = value
    if not MIN_COMPLEXITY <= low <= high <= MAX_COMPLEXITY:
        raise ValueError(f"complexity range must lie within {MIN_COMPLEXITY}-{MAX_COMPLEXITY}")
    return value


Range = Annotated[tuple[int, int], AfterValidator(_check_range)]


def _check_fraction(value: float) -> float:
    if not 0 <= value <= 1:
        hint = f" (write {value / 100:g} for {value:g}%)" if 1 < value <= 100 else ""
        raise ValueError(f"a threshold is a fraction from 0 to 1, not {value:g}{hint}")
    return value


Fraction = Annotated[float, AfterValidator(_check_fraction)]
"""A share such as a coverage threshold: 0.80 means 80 % (FEAT-GE-001 writes them so)."""


def _range_field(default: tuple[int, int] | None = None) -> Any:
    """A complexity range, read under our name or the design's (``complexity_range``)."""
    choices = AliasChoices("complexity", "complexity_range")
    if default is None:
        return Field(validation_alias=choices)
    return Field(default=default, validation_alias=choices)


class KnowledgeItem(BaseModel):
    """One seeded memory: stored in ``group`` as ``kind`` under the natural key ``key``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    group: ClassVar[str]
    kind: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _entity_type(cls, data: Any) -> Any:
        """The design's episodes name their kind in the body (``entity_type``): accepted when
        it is this item's kind, an error otherwise."""
        if isinstance(data, dict) and "entity_type" in data:
            data = dict(data)
            entity_type = data.pop("entity_type")
            if entity_type != cls.kind:
                raise ValueError(f"entity_type {entity_type!r} is not {cls.kind!r}")
        return data

    @property
    def key(self) -> str:
        raise NotImplementedError

    def title(self) -> str:
        raise NotImplementedError

    def to_episode(self, source: str) -> Episode:
        body = self.model_dump(mode="json")
        return Episode.create(
            group_id=self.group, kind=self.kind, name=self.title(), body=body, key=self.key,
            source=source,
        )


class RoleConstraints(KnowledgeItem):
    group: ClassVar[str] = ROLE_CONSTRAINTS_GROUP
    kind: ClassVar[str] = ROLE_CONSTRAINTS
    role: str
    description: str = ""
    must_do: tuple[str, ...] = ()
    must_not_do: tuple[str, ...] = ()
    ask_before: tuple[str, ...] = ()
    escalate_when: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"ROLE-{self.role}"

    def title(self) -> str:
        return f"{self.key}: constraints of the {self.role}"


class QualityGateProfile(KnowledgeItem):
    """FEAT-GE-001's ``QualityGateConfigEpisode``, its defaults included. A threshold of None
    means "not checked"; ``coverage_threshold`` is a fraction (0.80 is 80 %)."""

    group: ClassVar[str] = QUALITY_GATE_GROUP
    kind: ClassVar[str] = QUALITY_GATE_CONFIG
    task_type: str = Field(min_length=1)
    complexity: Range = _range_field((MIN_COMPLEXITY, MAX_COMPLEXITY))
    arch_review_required: bool = True
    arch_review_threshold: int | None = Field(default=60, ge=0, le=100)
    coverage_required: bool = True
    coverage_threshold: Fraction | None = 0.80
    tests_required: bool = True
    tests_must_pass: bool = True
    effective_from: str = ""
    """when the profile took effect (ISO date or time), as the design records it"""

    @property
    def key(self) -> str:
        return f"QG-{self.task_type}-{self.complexity[0]}-{self.complexity[1]}"

    def title(self) -> str:
        low, high = self.complexity
        return f"{self.key}: quality gates for {self.task_type} tasks of complexity {low}-{high}"


class ImplementationMode(KnowledgeItem):
    group: ClassVar[str] = IMPLEMENTATION_MODE_GROUP
    kind: ClassVar[str] = IMPLEMENTATION_MODE
    name: str = Field(validation_alias=AliasChoices("name", "mode"))
    complexity: Range = _range_field()
    ceremony_level: Literal["minimal", "standard", "full"]
    invocation_method: str
    result_location_pattern: str
    state_recovery_strategy: str
    when_to_use: tuple[str, ...]
    pitfalls: tuple[str, ...]
    task_types: tuple[str, ...] | None = None  # None: any task type

    @property
    def key(self) -> str:
        return f"MODE-{self.name}"

    def title(self) -> str:
        low, high = self.complexity
        return f"{self.key}: {self.ceremony_level} ceremony, complexity {low}-{high}"


_CEREMONY_ORDER = {"minimal": 0, "standard": 1, "full": 2}
_ITEM_TYPES: dict[str, type[KnowledgeItem]] = {
    ROLE_CONSTRAINTS: RoleConstraints,
    QUALITY_GATE_CONFIG: QualityGateProfile,
    IMPLEMENTATION_MODE: ImplementationMode,
}


def item_from_episode(episode: Episode) -> KnowledgeItem | None:
    """The knowledge item an episode of a system group holds, or None when it holds none
    (another kind, or a body that no longer parses: the caller keeps the built-in value)."""
    item_type = _ITEM_TYPES.get(episode.kind)
    data = episode.data
    if item_type is None or not isinstance(data, dict):
        return None
    try:
        return item_type.model_validate(_stored_percentages(data))
    except ValidationError:
        return None


def _stored_percentages(data: dict[str, Any]) -> dict[str, Any]:
    """Profiles stored before thresholds became fractions held percentages (80): read them as
    the fractions they meant, so an older home keeps its own profiles."""
    coverage = data.get("coverage_threshold")
    if isinstance(coverage, int | float) and not isinstance(coverage, bool) and 1 < coverage <= 100:
        return data | {"coverage_threshold": coverage / 100}
    return data


@dataclass(frozen=True)
class ModeSuggestion:
    """Advice, not a rule: which mode suits a task, and why."""

    mode: ImplementationMode
    task_type: str
    complexity: int
    reason: str

    @property
    def name(self) -> str:
        return self.mode.name

    @property
    def text(self) -> str:
        mode = self.mode
        lines = [
            f"Suggested mode: {mode.name} ({mode.ceremony_level} ceremony) for a {self.task_type} "
            f"task of complexity {self.complexity}: {self.reason}.",
            f"How: {mode.invocation_method}",
            f"Results: {mode.result_location_pattern}",
            f"Recovery: {mode.state_recovery_strategy}",
        ]
        lines += [f"Use for: {item}" for item in mode.when_to_use]
        lines += [f"Pitfall: {item}" for item in mode.pitfalls]
        return "\n".join(lines)


class SystemKnowledge(BaseModel):
    """Everything seeded into the system groups, plus how task types are named."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    roles: dict[str, RoleConstraints]
    gates: tuple[QualityGateProfile, ...]
    modes: tuple[ImplementationMode, ...]
    default_task_type: str
    task_type_aliases: dict[str, str]

    def items(self) -> list[KnowledgeItem]:
        return [*self.roles.values(), *self.gates, *self.modes]

    def version(self) -> str:
        """A digest of the content: it changes exactly when some default changes."""
        canonical = orjson.dumps(self.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
        return "sha256:" + hashlib.sha256(canonical).hexdigest()[:16]

    def merged(self, stored: list[KnowledgeItem]) -> SystemKnowledge:
        """These defaults with each stored item replacing the default of the same key."""
        roles = dict(self.roles)
        gates = {gate.key: gate for gate in self.gates}
        modes = {mode.key: mode for mode in self.modes}
        for item in stored:
            if isinstance(item, RoleConstraints):
                roles[item.role] = item
            elif isinstance(item, QualityGateProfile):
                gates[item.key] = item
            elif isinstance(item, ImplementationMode):
                modes[item.key] = item
        return self.model_copy(
            update={"roles": roles, "gates": tuple(gates.values()), "modes": tuple(modes.values())}
        )

    def role(self, role: str) -> RoleConstraints:
        try:
            return self.roles[role]
        except KeyError:
            known = ", ".join(sorted(self.roles))
            raise KnowledgeError(f"unknown role {role!r}; known roles: {known}") from None

    def canonical_task_type(self, task_type: str) -> str:
        """``task_type`` as the gate profiles name it: aliases resolved, unknown types judged as
        the default type (the strictest common profile, so nothing escapes its gates)."""
        folded = task_type.strip().casefold()
        folded = self.task_type_aliases.get(folded, folded)
        if any(gate.task_type == folded for gate in self.gates):
            return folded
        return self.default_task_type

    def gate(self, task_type: str, complexity: int) -> QualityGateProfile:
        """The profile of the task type whose range contains ``complexity``; if stored
        knowledge made ranges overlap, the narrowest wins (then the lowest)."""
        check_complexity(complexity)
        canonical = self.canonical_task_type(task_type)
        matches = [
            gate for gate in self.gates
            if gate.task_type == canonical
            and gate.complexity[0] <= complexity <= gate.complexity[1]
        ]
        if not matches:
            raise KnowledgeError(f"no {canonical} gate profile covers complexity {complexity}")
        return min(matches, key=lambda g: (g.complexity[1] - g.complexity[0], g.complexity[0]))

    def suggest_mode(self, task_type: str, complexity: int) -> ModeSuggestion:
        """The rule for overlapping ranges: among the modes open to the task type, those whose
        range contains the complexity; of these the one whose range centre is nearest (so 3 is
        direct, 5 and 6 task_work, 7 autobuild); a tie goes to less ceremony. When no open mode
        contains it, the open mode whose range is nearest."""
        check_complexity(complexity)
        canonical = self.canonical_task_type(task_type)
        open_modes = [m for m in self.modes if m.task_types is None or canonical in m.task_types]
        if not open_modes:
            raise KnowledgeError(f"no implementation mode is open to {canonical} tasks")

        def distance(mode: ImplementationMode) -> tuple[float, float, int]:
            low, high = mode.complexity
            outside = max(low - complexity, complexity - high, 0)
            centre = abs((low + high) / 2 - complexity)
            return outside, centre, _CEREMONY_ORDER[mode.ceremony_level]

        best = min(open_modes, key=distance)
        low, high = best.complexity
        if low <= complexity <= high:
            reason = f"its range {low}-{high} fits complexity {complexity} best"
        else:
            reason = f"the nearest mode open to {canonical} tasks (range {low}-{high})"
        return ModeSuggestion(best, canonical, complexity, reason)


def _read_yaml(name: str) -> dict[str, Any]:
    text = resources.files("seeds").joinpath("data", name).read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise KnowledgeError(f"seeds/data/{name} must hold a mapping")
    return data


@cache
def builtin_knowledge() -> SystemKnowledge:
    """The defaults shipped in ``seeds/data`` (read once per process)."""
    roles = _read_yaml("role_constraints.yaml")
    gates = _read_yaml("quality_gates.yaml")
    modes = _read_yaml("implementation_modes.yaml")
    try:
        return SystemKnowledge(
            roles={name: RoleConstraints(role=name, **s) for name, s in roles["roles"].items()},
            gates=tuple(QualityGateProfile(**spec) for spec in gates["profiles"]),
            modes=tuple(ImplementationMode(**spec) for spec in modes["modes"]),
            default_task_type=gates["default_task_type"],
            task_type_aliases=gates.get("aliases") or {},
        )
    except (KeyError, TypeError, ValidationError) as exc:
        raise KnowledgeError(f"seeds/data is not valid system knowledge: {exc}") from exc
