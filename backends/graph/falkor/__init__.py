"""The graph on a FalkorDB server, through graphiti's ``FalkorDriver``: ``backend.FalkorBackend``
is the layer; its Cypher is in ``queries.py``; ``wire.py`` and ``rows.py`` serve one-shot reads
that must not import the driver. Importing this package imports neither graphiti nor redis."""
