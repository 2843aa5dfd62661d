"""The search engine both layers share: the lexical scale (``ranking``), the chunked BM25 index
in SQLite (``textindex``) with its top-k bound (``topk``), its numpy scorer (``dense``) and its
misspelling scan (``typos``), and the joining of hits through entities (``expansion``)."""
