"""Per-project overrides of system knowledge, from ``<home>/entity-overrides.yaml``.

    roles:
      player:
        must_do_additions: [Run the linters before handing over]
        ask_before_additions: [Adding a database migration]
    quality_gates:
      feature:
        "4-6": {coverage_threshold: 75, arch_review_threshold: 55}

``*_additions`` extend a role's lists (they never replace them); a quality-gate entry replaces
the thresholds it names in the profile whose complexity range it names. Overrides apply on top
of whatever knowledge is in force (stored, else built-in), so they always win.
"""

from __future__ import annotations

from pathlib import Path

import yaml  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, ValidationError

from backends.model import problems
from seeds.knowledge import KnowledgeError, QualityGateProfile, RoleConstraints, SystemKnowledge

OVERRIDES_FILE = "entity-overrides.yaml"


class RoleAdditions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    must_do_additions: tuple[str, ...] = ()
    must_not_do_additions: tuple[str, ...] = ()
    ask_before_additions: tuple[str, ...] = ()
    escalate_when_additions: tuple[str, ...] = ()

    def apply(self, role: RoleConstraints) -> RoleConstraints:
        changes = {}
        for field in ("must_do", "must_not_do", "ask_before", "escalate_when"):
            current: tuple[str, ...] = getattr(role, field)
            extra = [item for item in getattr(self, f"{field}_additions") if item not in current]
            changes[field] = (*current, *extra)
        return role.model_copy(update=changes)


class GateOverride(BaseModel):
    """Only the fields given are replaced (``null`` is a value: "not checked")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arch_review_required: bool | None = None
    arch_review_threshold: int | None = None
    coverage_required: bool | None = None
    coverage_threshold: float | None = None
    tests_required: bool | None = None

    def apply(self, profile: QualityGateProfile) -> QualityGateProfile:
        data = profile.model_dump() | self.model_dump(include=self.model_fields_set)
        try:
            return QualityGateProfile.model_validate(data)
        except ValidationError as exc:
            detail = problems(exc)
            raise KnowledgeError(f"override of {profile.key} is not valid: {detail}") from None


class Overrides(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    roles: dict[str, RoleAdditions] = {}
    quality_gates: dict[str, dict[str, GateOverride]] = {}

    def apply(self, knowledge: SystemKnowledge) -> SystemKnowledge:
        """``knowledge`` with these overrides on top. A role unknown to it is created from its
        additions (a project may have roles of its own); a gate range that names no profile is
        an error, since it is almost surely a typo."""
        roles = dict(knowledge.roles)
        for name, additions in self.roles.items():
            roles[name] = additions.apply(roles.get(name) or RoleConstraints(role=name))
        gates = {(gate.task_type, gate.complexity): gate for gate in knowledge.gates}
        for task_type, by_range in self.quality_gates.items():
            canonical = knowledge.task_type_aliases.get(task_type, task_type)
            for named_range, override in by_range.items():
                where = (canonical, _parse_range(named_range))
                if where not in gates:
                    known = sorted(f"{t}-{lo}-{hi}" for t, (lo, hi) in gates)
                    raise KnowledgeError(
                        f"override names QG-{canonical}-{named_range}, which is no profile; "
                        f"profiles: {', '.join(known)}"
                    )
                gates[where] = override.apply(gates[where])
        return knowledge.model_copy(update={"roles": roles, "gates": tuple(gates.values())})


def _parse_range(text: str) -> tuple[int, int]:
    low, sep, high = str(text).partition("-")
    try:
        if sep:
            return int(low), int(high)
    except ValueError:
        pass
    raise KnowledgeError(f"a quality-gate override names a range as LOW-HIGH, not {text!r}")


def load_overrides(path: Path, *, missing_ok: bool = False) -> Overrides:
    """The overrides in ``path``; no overrides when it is missing and ``missing_ok``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return Overrides()
        raise KnowledgeError(f"{path}: no such overrides file") from None
    try:
        return Overrides.model_validate(yaml.safe_load(text) or {})
    except (yaml.YAMLError, ValidationError) as exc:
        detail = problems(exc) if isinstance(exc, ValidationError) else exc
        raise KnowledgeError(f"{path}: not a valid overrides file: {detail}") from None
