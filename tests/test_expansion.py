"""Links weigh what named them (``backends.search.expansion``): an entity named outright (a path, a
name in backticks) links fully; one named by words counts by the share of the query they are,
split among the entities the same words name; a query naming nothing links nothing. Run over
the graph's links (``GraphLinks``), built from real extraction."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from backends.graph.links import GraphLinks
from backends.model import Episode
from backends.search.entities import extract
from backends.search.expansion import linked, naming

AT = datetime(2026, 12, 1, tzinfo=UTC)
FILES = ("app/api/refunds.py", "app/services/refunds.py", "admin/src/pages/Refunds.tsx")


def discovery(path: str) -> Episode:
    return Episode.create(group_id="p", kind="codebase_discovery", name=path,
                          body={"file": path, "description": "what the file is for"}, key=path)


@pytest.fixture
def links() -> GraphLinks:
    found = GraphLinks()
    for episode in [discovery(path) for path in FILES] + [
        Episode.create(group_id="p", kind="gotcha", name="timeouts",
                       body="Stripe calls time out after 10 s", key="timeouts")]:
        found.put(episode, extract(episode), (), AT)
    return found


def strengths(links: GraphLinks, query: str) -> dict[str, float]:
    names = {discovery(path).id: path for path in FILES}
    return {names[key]: value for key, value in linked(links, query, ["p"], None).items()}


def test_an_entity_named_outright_links_fully(links: GraphLinks) -> None:
    found = strengths(links, "what breaks in app/api/refunds.py")
    # The other two files share the word "refund" with it: one of five query terms, split two
    # ways (the file named outright is not among those the word names).
    assert found == pytest.approx({"app/api/refunds.py": 1.0, "app/services/refunds.py": 0.1,
                                   "admin/src/pages/Refunds.tsx": 0.1})


def test_a_word_that_is_several_files_stem_names_none_of_them_firmly(links: GraphLinks) -> None:
    # "refund" is the stem of three files: one word of three, split three ways.
    found = strengths(links, "refund captured amount")
    assert found == pytest.approx(dict.fromkeys(FILES, 1 / 3 / 3))
    # The same word alone is the whole query: still split among the three files.
    assert strengths(links, "refunds") == pytest.approx(dict.fromkeys(FILES, 1 / 3))


def test_a_query_naming_nothing_links_nothing(links: GraphLinks) -> None:
    assert strengths(links, "captured amount") == {}


def test_naming_is_the_share_of_the_query_split_among_the_named() -> None:
    words = frozenset({"stripe", "client"})
    assert naming(True, words, 10, 4) == 1.0
    assert naming(False, words, 4, 1) == 0.5
    assert naming(False, words, 4, 2) == 0.25
    assert naming(False, words, 1, 1) == 1.0  # never more than the whole query
