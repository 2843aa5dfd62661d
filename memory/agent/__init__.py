"""The agent-facing API over a store: typed records (gotchas, patterns, outcomes, sessions,
decisions, turn states), where each lives (scopes), seeded knowledge and the Markdown views.

It sits on ``memory.store`` and below ``memory.context`` and the interfaces.
"""
