"""A scripted stand-in for a remote LLM (the only kind of double the tests allow), imported
without graphiti: the graph tests' network guard (conftest.py) lets connects to it through."""

from __future__ import annotations

from typing import Any

SERVING: set[tuple[str, int]] = set()
"""addresses of the stand-ins serving now: the only ones graph tests may connect to"""


class ScriptedChat:
    """An OpenAI-compatible chat endpoint on a local port (a real HTTP server, so a CLI in
    another process can use it too): each request for a response schema (graphiti names its
    prompts' models: ``ExtractedEntities``, ``ExtractedEdges``, ...) is answered from
    ``answers[name]`` (a value, or a function of the request's messages), else with the
    schema's empty instance. ``failing`` answers every call with a 503."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        import orjson

        chat = self
        self.answers = dict(answers or {})
        self.asked: list[str] = []
        self.failing = False

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                request = orjson.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, body = chat.answer(request)
                payload = orjson.dumps(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                """quiet"""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = ("127.0.0.1", self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.address[1]}/v1"
        SERVING.add(self.address)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        SERVING.discard(self.address)
        self.server.shutdown()
        self.server.server_close()

    def answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        import orjson

        if self.failing:
            return 503, {"error": {"message": "overloaded", "type": "server_error"}}
        form = request.get("response_format", {}).get("json_schema", {})
        name, schema = form.get("name", ""), form.get("schema", {})
        self.asked.append(name)
        given = self.answers.get(name)
        content = (given(request["messages"]) if callable(given)
                   else given if given is not None else _empty(schema, schema))
        return 200, {
            "id": "chat-1", "object": "chat.completion", "created": 0, "model": request["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": orjson.dumps(content).decode()}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }


def _empty(schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """The least value a JSON schema accepts (required fields only)."""
    if "$ref" in schema:
        return _empty(root["$defs"][schema["$ref"].rsplit("/", 1)[-1]], root)
    if "anyOf" in schema:
        kinds = [option.get("type") for option in schema["anyOf"]]
        return None if "null" in kinds else _empty(schema["anyOf"][0], root)
    kind = schema.get("type", "object")
    if kind == "object":
        return {key: _empty(schema["properties"][key], root)
                for key in schema.get("required", [])}
    return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False}.get(kind)
