"""Memory that writes itself: what a Claude Code session did, read from its transcript and kept
as memories, offline and deterministically (``run.capture_transcript``). The room's parts, in
the order a line goes through them: ``reading`` (bounded, from the ``cursor``), ``transcript``
(a line's events), ``session`` (the fold; ``checks`` and ``lessons`` read commands and replies,
``redact`` keeps secrets out), ``derive`` (the memories), ``keep`` (the writes)."""
