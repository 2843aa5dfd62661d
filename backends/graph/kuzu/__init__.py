"""The embedded graph: Kùzu 0.11.3 and its fork LadybugDB, one code base (``engines.py`` holds
what differs). ``store.GraphBackend`` is the layer; its Cypher is in ``queries.py``. Importing
this package imports neither engine."""
