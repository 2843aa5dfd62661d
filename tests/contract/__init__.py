"""The contract suite: every memory layer passes these tests unchanged."""
