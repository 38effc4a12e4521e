"""A scripted stand-in for the model APIs on 127.0.0.1, for end-to-end runs of the real CLIs.

Gemini: each turn is `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`, answered
with SSE `data:` lines carrying `candidates[0].content.parts`. Qwen (OpenAI-compatible):
`POST /v1/chat/completions` with `stream: true`, answered with chat.completion.chunk lines.
The script is a list of turns; each turn is either a text or a tool call. Requests are
recorded so tests can assert what the CLI sent back to the model (tool results).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Turn:
    text: str | None = None
    call: str | None = None  # tool name
    args: dict[str, Any] = field(default_factory=dict)


class FakeModel:
    def __init__(self, script: list[Turn]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                model._record(self.path, body)
                if "chat/completions" in self.path:
                    self._stream(model._openai_chunks(model._next_turn(body)))
                elif "streamGenerateContent" in self.path:
                    self._stream([model._gemini_chunk(model._next_turn(body))])
                elif ":generateContent" in self.path:
                    # Side calls (e.g. next-speaker or loop checks): answer plainly, consume nothing.
                    self._json(json.loads(model._gemini_chunk(Turn(text='{"next_speaker": "user"}'))))
                elif ":countTokens" in self.path:
                    self._json({"totalTokens": 1})
                else:
                    self._json({})

            def _json(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, chunks: list[str]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {chunk}\n\n".encode())
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append({"path": path, "body": body})

    def _next_turn(self, body: dict[str, Any]) -> Turn:
        with self._lock:
            return self.script.pop(0) if self.script else Turn(text="Done.")

    @staticmethod
    def _gemini_chunk(turn: Turn) -> str:
        part: dict[str, Any] = (
            {"functionCall": {"name": turn.call, "args": turn.args}} if turn.call else {"text": turn.text or ""}
        )
        return json.dumps(
            {
                "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            }
        )

    @staticmethod
    def _openai_chunks(turn: Turn) -> list[str]:
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "fake"}
        if turn.call:
            delta: dict[str, Any] = {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": turn.call, "arguments": json.dumps(turn.args)},
                    }
                ],
            }
            finish = "tool_calls"
        else:
            delta = {"role": "assistant", "content": turn.text or ""}
            finish = "stop"
        return [
            json.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            json.dumps({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
            json.dumps({**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
            "[DONE]",
        ]

    def tool_results(self) -> list[Any]:
        """Every functionResponse (Gemini) or tool message (OpenAI) the CLI sent back."""
        results: list[Any] = []
        with self._lock:
            requests = list(self.requests)
        for request in requests:
            body = request["body"]
            for content in body.get("contents", []):
                for part in content.get("parts", []):
                    if "functionResponse" in part:
                        results.append(part["functionResponse"])
            for message in body.get("messages", []):
                if message.get("role") == "tool":
                    results.append(message)
        return results

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def qwen_edit(target: Path) -> list[Turn]:
    """Qwen's edit of notes.txt (beta -> gamma): it reads a file before it edits it."""
    return [
        Turn(call="read_file", args={"file_path": str(target)}),
        Turn(call="edit", args={"file_path": str(target), "old_string": "beta", "new_string": "gamma"}),
        Turn(text="Edited."),
    ]


class PromptModel(FakeModel):
    """A model that answers by the user's last message, as often as asked: `replies` maps a text
    in that message to a turn; after a tool's result it answers `after_tool`. Nothing is used up, so
    a CLI's side requests (Qwen asks again after a text turn) take no turn of the script."""

    def __init__(self, replies: dict[str, Turn], after_tool: str = "Made it.") -> None:
        super().__init__([])
        self.replies, self.after_tool = replies, after_tool
        self.gate = threading.Event()  # cleared: each answer waits until it is set (the test saw the turn)
        self.gate.set()

    def _next_turn(self, body: dict[str, Any]) -> Turn:
        self.gate.wait(120)
        last: Any = (body.get("contents") or body.get("messages") or [{}])[-1]
        if last.get("role") == "tool" or any("functionResponse" in part for part in last.get("parts", [])):
            return Turn(text=self.after_tool)
        said = json.dumps(last)
        return next((turn for key, turn in self.replies.items() if key in said), Turn(text="Done."))
