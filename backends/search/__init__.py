"""The search engine both layers share: the lexical scale (``ranking``), the chunked BM25 index
in SQLite (``textindex``: its chunks in ``postings``, a term's widening in ``widening``, with
``typos``), its top-k bound (``topk``) and numpy scorer (``dense``), the entities a memory names
(``entities``) and the joining of hits through them (``expansion``)."""
