"""The chat request an agent may send: exactly the fields the proxy meters, nothing else.

An agent's body is decoded into these structs and the upstream receives their
re-encoding, so a field the contract does not name (a router's `models` or
`provider`, llama.cpp's `n_predict`, a second completion through `n`) never
reaches the model: it is refused with a 400 that names it. Decoding is strict
(msgspec): a `max_tokens` of 4096.0 or `true` is refused as not an integer, and
a body that is not a JSON object is refused at its first byte.

What passes: `model` (replaced by the validator's), `messages` (text only: an
image part could cost tokens its bytes do not bound), and the sampling fields
an OpenAI-compatible server documents: temperature, top_p, max_tokens,
max_completion_tokens, stop, seed, presence_penalty, frequency_penalty,
response_format, tools, tool_choice, parallel_tool_calls, stream and
stream_options. `n` may only be 1: each request is one completion.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

# Every token a prompt can cost is at least one byte of the body the upstream
# receives (chat templates add a few tokens per message, and each message
# carries more JSON punctuation than that), so the body's length bounds it.
PROMPT_TOKENS_PER_BYTE = 1
DEFAULT_COMPLETION_TOKENS = 8192  # the reply cap when the agent sets none
_LEADING_SPACE = b" \t\r\n"

Count = Annotated[int, msgspec.Meta(ge=1)]
Unit = Annotated[float, msgspec.Meta(ge=0.0, le=2.0)]
Penalty = Annotated[float, msgspec.Meta(ge=-2.0, le=2.0)]


class RequestRefused(ValueError):
    """The body is outside the contract; the message says where (shown to the agent)."""


class _Struct(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class TextPart(_Struct):
    type: Literal["text"]
    text: str


class FunctionCall(_Struct):
    name: str
    arguments: str


class ToolCall(_Struct):
    id: str
    type: Literal["function"]
    function: FunctionCall


class Message(_Struct):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class Function(_Struct):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None  # a JSON schema: bounded by the body's size
    strict: bool | None = None


class Tool(_Struct):
    type: Literal["function"]
    function: Function


class StreamOptions(_Struct):
    include_usage: bool = False


class ChatRequest(_Struct):
    messages: Annotated[list[Message], msgspec.Meta(min_length=1)]
    model: str | None = None
    temperature: Unit | None = None
    top_p: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] | None = None
    max_tokens: Count | None = None
    max_completion_tokens: Count | None = None
    stop: str | Annotated[list[str], msgspec.Meta(max_length=4)] | None = None
    seed: Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)] | None = None
    presence_penalty: Penalty | None = None
    frequency_penalty: Penalty | None = None
    response_format: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    n: Literal[1] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None

    @property
    def asked_completion(self) -> int:
        """The reply cap the agent asked for (the smaller of the two fields it may use)."""
        asked = [c for c in (self.max_tokens, self.max_completion_tokens) if c is not None]
        return min(asked, default=DEFAULT_COMPLETION_TOKENS)

    @property
    def wants_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage

    def upstream(self, model: str, completion: int) -> bytes:
        """The body the upstream receives: the served model, the reply capped at
        `completion` in the field the agent used (`max_tokens` when it used none:
        the one every OpenAI-compatible server reads), and, when streaming, the
        final usage chunk asked for, since it is what the meter reads."""
        if self.max_completion_tokens is None:
            capped: dict[str, int | None] = {"max_tokens": completion}
        else:
            capped = {"max_completion_tokens": completion, "max_tokens": None}
        stream = {"stream_options": StreamOptions(include_usage=True)} if self.stream else {}
        return msgspec.json.encode(msgspec.structs.replace(self, model=model, **capped, **stream))


def prompt_bound(body: bytes) -> int:
    """The most prompt tokens this upstream body can cost."""
    return len(body) * PROMPT_TOKENS_PER_BYTE


def refuse_early(head: bytes) -> None:
    """Refuse from the body's first bytes what can never be an object (a JSON array, a number),
    before the rest is read."""
    start = head.lstrip(_LEADING_SPACE)[:1]
    if start and start != b"{":
        raise RequestRefused("the body must be a JSON object")


def parse_request(raw: bytes) -> ChatRequest:
    """The request within the contract, or `RequestRefused` naming the first field outside it."""
    refuse_early(raw[:64])
    try:
        return msgspec.json.decode(raw, type=ChatRequest)
    except msgspec.ValidationError as exc:
        if str(exc).endswith("`$.n`"):
            raise RequestRefused("n: each request is one completion (n must be 1)") from None
        raise RequestRefused(f"the request is outside the proxy's contract: {exc}") from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise RequestRefused(f"the body is not a JSON object: {exc}") from None
