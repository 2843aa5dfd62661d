"""Curation: the operations people and agents correct memory with (get, list, update, forget,
restore, history, decisions, the graph's entities and facts, near-duplicates), written once
here for MCP, the CLI and the memory browser, over any ``MemoryBackend``."""
