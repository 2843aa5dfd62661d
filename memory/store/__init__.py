"""Building the store: configuration, where the home is, which layer serves, the dual store
(journal + graph), its status, migration into it, and the synchronous facade.

The bottom room of ``memory``: it imports only the layers below (``backends``, ``fallback``,
``migrate``, ``seeds``), never the agent API, context or the interfaces above it.
"""
