"""An OpenAI-compatible ``/v1/embeddings`` endpoint on localhost over a sentence-transformers
model read from a folder: what a local Ollama or vLLM serves, for measuring the configured
embedder path (``DUALMEM_EMBEDDER=MODEL@http://127.0.0.1:PORT/v1``) with no network. Run it
with a Python that has sentence-transformers (not a dualmem dependency):

    python -P bench/embedding_endpoint.py MODEL_DIR [PORT]     (default port 8765)
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any


def serve(model_dir: str, port: int) -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu")

    class Embeddings(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if not self.path.endswith("/embeddings"):
                self.send_error(404)
                return
            asked: dict[str, Any] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = asked["input"] if isinstance(asked["input"], list) else [asked["input"]]
            vectors = model.encode(texts, batch_size=64, normalize_embeddings=True)
            body = json.dumps({"object": "list", "model": asked.get("model", ""),
                               "data": [{"object": "embedding", "index": n,
                                         "embedding": v.tolist()}
                                        for n, v in enumerate(vectors)],
                               "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass  # one line per request would drown the benchmark's output

    print(f"serving {model_dir} at http://127.0.0.1:{port}/v1", flush=True)
    HTTPServer(("127.0.0.1", port), Embeddings).serve_forever()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8765)
