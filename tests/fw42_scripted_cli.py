"""The `claude` CLI's side of the Claude Agent SDK's stream-json control protocol, scripted.

The Claude Agent SDK (`claude_agent_sdk.ClaudeSDKClient`) takes a custom `Transport` in place
of the `claude` subprocess (its `transport=` argument, documented in the client's docstring).
`ScriptedCli` is that transport: it answers the SDK's `initialize` control request, and for
each user message the SDK writes it plays the next scripted turn as the CLI does when the model
asks for several tools at once: one assistant message with the `tool_use` blocks, then one
`can_use_tool` control request per call (sent together, `permission_suggestions` as Claude
Code offers them), and once the SDK has answered every one, the tool results (a deny's message
as an error result, as Claude Code reports a denied call) and a `result` message. What the SDK
answered (`control_response` per request id) is kept for the test to read: it is what the CLI
would read. Nothing of the SDK is replaced: the client, its query, its control-request
routing and its result classes run as shipped.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage
from claude_agent_sdk._internal.transport import Transport

SESSION = "scripted-session"


@dataclass(frozen=True)
class Call:
    """One tool call the scripted model makes."""

    tool_use_id: str
    tool_name: str
    tool_input: dict[str, Any]
    suggestions: Sequence[dict[str, Any]] = ()


@dataclass
class Turn:
    """What the CLI read back for one turn: the SDK's answer per tool_use_id, and the tool
    results the model was given."""

    calls: Sequence[Call]
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)


class ScriptedCli(Transport):
    """The CLI, playing `turns` one per user message (see the module's docstring)."""

    def __init__(self, turns: Sequence[Sequence[Call]]) -> None:
        self.turns = [Turn(list(calls)) for calls in turns]
        self.played = 0
        self._out: MemoryObjectSendStream[dict[str, Any]]
        self._in: MemoryObjectReceiveStream[dict[str, Any]]
        self._out, self._in = anyio.create_memory_object_stream[dict[str, Any]](1000)
        self._asked: dict[str, tuple[Turn, Call]] = {}

    async def connect(self) -> None:
        return None

    def is_ready(self) -> bool:
        return True

    async def end_input(self) -> None:
        return None

    async def close(self) -> None:
        self._out.close()
        self._in.close()

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        with self._in:
            async for message in self._in:
                yield message

    async def write(self, data: str) -> None:
        for line in data.splitlines():
            if line.strip():
                await self._read(json.loads(line))

    async def _read(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "control_request" and message["request"]["subtype"] == "initialize":
            await self._out.send(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": message["request_id"],
                        "response": {"commands": [], "output_style": "default"},
                    },
                }
            )
        elif kind == "user":
            await self._play(self.turns[self.played])
            self.played += 1
        elif kind == "control_response":
            response = message["response"]
            turn, call = self._asked.pop(response["request_id"])
            assert response["subtype"] == "success", response
            turn.answers[call.tool_use_id] = dict(response["response"])
            if len(turn.answers) == len(turn.calls):
                await self._finish(turn)

    async def _play(self, turn: Turn) -> None:
        blocks = [
            {"type": "tool_use", "id": c.tool_use_id, "name": c.tool_name, "input": c.tool_input}
            for c in turn.calls
        ]
        await self._out.send(
            {
                "type": "assistant",
                "message": {"role": "assistant", "model": "scripted", "content": blocks},
                "parent_tool_use_id": None,
                "session_id": SESSION,
            }
        )
        for call in turn.calls:
            request_id = f"req_{call.tool_use_id}"
            self._asked[request_id] = (turn, call)
            await self._out.send(
                {
                    "type": "control_request",
                    "request_id": request_id,
                    "request": {
                        "subtype": "can_use_tool",
                        "tool_name": call.tool_name,
                        "input": call.tool_input,
                        "permission_suggestions": list(call.suggestions),
                        "tool_use_id": call.tool_use_id,
                        "blocked_path": None,
                    },
                }
            )

    async def _finish(self, turn: Turn) -> None:
        """The calls allowed run (the input the SDK answered with); the denied ones are the
        model's error results carrying the deny's message, as Claude Code reports them."""
        for call in turn.calls:
            answer = turn.answers[call.tool_use_id]
            if answer["behavior"] == "allow":
                ran = answer.get("updatedInput", call.tool_input)
                turn.results[call.tool_use_id] = {
                    "type": "tool_result",
                    "tool_use_id": call.tool_use_id,
                    "content": f"ran {call.tool_name} with {json.dumps(ran, sort_keys=True)}",
                }
            else:
                turn.results[call.tool_use_id] = {
                    "type": "tool_result",
                    "tool_use_id": call.tool_use_id,
                    "content": answer["message"],
                    "is_error": True,
                }
        await self._out.send(
            {
                "type": "user",
                "message": {"role": "user", "content": list(turn.results.values())},
                "parent_tool_use_id": None,
                "session_id": SESSION,
            }
        )
        await self._out.send(
            {
                "type": "result",
                "subtype": "success",
                "duration_ms": 1,
                "duration_api_ms": 1,
                "is_error": False,
                "num_turns": 1,
                "session_id": SESSION,
                "result": "done",
            }
        )


async def run_turn(client: ClaudeSDKClient, prompt: str = "go") -> list[Any]:
    """One user message through the SDK's public client, and every message it yields until
    the turn's result."""
    await client.query(prompt)
    seen: list[Any] = []
    async for message in client.receive_response():
        seen.append(message)
    assert isinstance(seen[-1], ResultMessage)
    return seen


def client_for(callback: Any, cli: ScriptedCli) -> ClaudeSDKClient:
    """The SDK's public client, its permission prompts answered by `callback`."""
    return ClaudeSDKClient(ClaudeAgentOptions(can_use_tool=callback), transport=cli)
