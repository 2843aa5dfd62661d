"""The labels that mark a lesson in a reply (``gotcha: ...``): one list for the capture's
reading (``lessons``) and for its fast path's test of whether a reply may hold one (``quick``,
which imports nothing heavy, this module included)."""

LESSON_LABELS = ("gotcha", "pattern", "discovery")
