"""A feature's overview (000's ``FeatureOverviewEntity``): what the feature is and is not, and
the rules it must never break, so that a long run does not drift from its purpose.

Stored as a ``feature_overview`` memory in the project's group keyed by the feature's id, so
recording it again replaces it. A hand-written overview or spec (plain text) is read too: its
name is the feature's name and its text the purpose.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from backends.model import Episode, now, stable_id, utc
from backends.protocol import MemoryBackend
from memory.agent.records import ReadsAsMapping, parse, title, without_entity_type
from memory.agent.scopes import FEATURE_OVERVIEW, FEATURE_SPEC, project_group

Strings = tuple[str, ...]
Time = Annotated[datetime, AfterValidator(utc)]


class FeatureOverview(ReadsAsMapping, BaseModel):
    """000's ``FeatureOverviewEntity``, every field as written."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str = Field(min_length=1)
    name: str = ""
    tagline: str = ""
    purpose: str = ""
    what_it_is: Strings = ()
    what_it_is_not: Strings = ()
    invariants: Strings = ()
    architecture_summary: str = ""
    key_components: Strings = ()
    key_decisions: Strings = ()
    created_at: Time | None = None
    updated_at: Time | None = None

    @model_validator(mode="before")
    @classmethod
    def _design_body(cls, data: Any) -> Any:
        return without_entity_type(data, FEATURE_OVERVIEW)

    @classmethod
    def from_episode(cls, episode: Episode) -> FeatureOverview:
        """The overview an episode holds; a plain-text one as its name and purpose."""
        record = parse(episode, cls) if isinstance(episode.data, dict) else None
        if record is not None:
            return record
        feature_id = episode.name.split(":", 1)[0].strip() or episode.id
        return cls(id=feature_id, name=episode.name, purpose=episode.body)


async def record_feature_overview(
    store: MemoryBackend, project_id: str, overview: FeatureOverview
) -> FeatureOverview:
    """Store ``overview`` under its id (replacing an earlier one)."""
    stamped = overview.model_copy(update={"updated_at": overview.updated_at or now()})
    await store.upsert(Episode.create(
        group_id=project_group(project_id), kind=FEATURE_OVERVIEW,
        name=title(f"{overview.id}: {overview.name or overview.tagline or overview.id}"),
        body=stamped.model_dump(mode="json", exclude_defaults=True), key=overview.id,
        source="feature_build", **({"created_at": overview.created_at}
                                   if overview.created_at else {}),
    ))
    return stamped


async def find_feature_memory(
    store: MemoryBackend, project_id: str, feature_id: str
) -> Episode | None:
    """The feature's overview (``feature_overview``) or spec (``feature_spec``) stored under its
    id; else the best match of either that names it."""
    group = project_group(project_id)
    for kind in (FEATURE_OVERVIEW, FEATURE_SPEC):
        found = await store.get(stable_id(group, kind, feature_id))
        if found is not None:
            return found
    hits = await store.search(feature_id, group_ids=[group],
                              kinds=[FEATURE_OVERVIEW, FEATURE_SPEC], limit=5)
    named = [hit.episode for hit in hits
             if feature_id.casefold() in f"{hit.episode.name} {hit.episode.body}".casefold()]
    return named[0] if named else None


async def load_feature_overview(
    store: MemoryBackend, project_id: str, feature_name: str
) -> FeatureOverview | None:
    """000's ``load_feature_overview``: the feature's overview, or None."""
    episode = await find_feature_memory(store, project_id, feature_name)
    return None if episode is None else FeatureOverview.from_episode(episode)
