"""``dualmem ui``: the memory browser, a small web app on 127.0.0.1 over one open store.

``guard`` lets in only this launch's page (a token in the URL, the loopback host); ``app``
answers the page's requests with the same operations the CLI and MCP use; ``static/`` is the
page itself, built into the wheel (no build step, nothing fetched at run time)."""
