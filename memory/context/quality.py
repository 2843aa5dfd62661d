"""Quality metrics of an assembled context (FEAT-GR-006's ``ContextQualityMetrics``), from the
statistics ``build_context`` keeps per category: how much of the budget the context uses, how
full each category's allocation is, and how many candidates were kept and dropped."""

from __future__ import annotations

from typing import Any

from memory.context.assemble import ContextResult


def quality_metrics(result: ContextResult) -> dict[str, Any]:
    """``budget_utilization`` (0-1), ``category_coverage`` (each category's used share of its
    allocation, 0-1), ``items_kept`` and ``items_dropped`` (candidates that did not fit)."""
    stats = result.categories.values()
    kept = sum(s.kept for s in stats)
    return {
        "budget_utilization": _share(result.tokens_used, result.budget),
        "category_coverage": {
            category.value: _share(s.used, s.allocated) for category, s in result.categories.items()
        },
        "items_kept": kept,
        "items_dropped": sum(s.candidates for s in stats) - kept,
    }


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0
