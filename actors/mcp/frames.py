"""JSON-RPC frames (one message each) parsed and encoded without holding up the event loop.

A frame below `BIG_FRAME_BYTES` is parsed or encoded on the loop in one call, as the SDK does:
that is the fastest way for the small messages that make up nearly all traffic. A bigger one
goes to the loop's worker thread (`parse_off_loop`, `encode_off_loop`, by `actors.mcp.loop.offload`),
and there it is handled in pieces: a worker thread that made one long C call (pydantic parsing
a 10 MB line holds the GIL from start to end, 20-90 ms) would stall the loop as surely as the
loop doing it itself. So:

- parsing cuts every long string literal out of the frame and decodes it a piece at a time;
  what is left (the frame's structure, with a placeholder per literal) is parsed in one call
  and validated from Python data, where each long string is taken as it is;
- encoding dumps the message to plain data and writes long strings a piece at a time.

Between pieces the worker runs Python code, so the interpreter hands the GIL to the loop
thread every switch interval. The longest single hold left is joining a long string's pieces,
one copy of it (a few ms for 10 MB). A frame whose structure itself is huge (thousands of
small strings) is still parsed in one call, off the loop.

A big frame the piecewise parse does not accept (it is not JSON, or not a message, or holds a
lone surrogate) is parsed again as `parse_line` parses it, for the same result or error.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterable, Sequence
from json.encoder import encode_basestring
from typing import Any, Final

import mcp_types as types
from mcp.shared.message import SessionMessage

from actors.mcp.loop import offload

__all__ = [
    "BIG_FRAME_BYTES",
    "encode_frame",
    "encode_off_loop",
    "is_big_message",
    "join_parts",
    "parse_frame",
    "parse_line",
    "parse_off_loop",
    "validate_off_loop",
]

BIG_FRAME_BYTES: Final = 256 * 1024
"""Frames at least this long are parsed and encoded on a worker thread, in pieces."""

_LONG_LITERAL = 32 * 1024
"""String literals at least this long (in bytes, escaped) are cut out and decoded in pieces."""
_PIECE = 128 * 1024
"""Bytes (or characters) handled by one call while decoding or encoding a long string."""

_BACKSLASH: Final = 0x5C
_QUOTE: Final = 0x22
_CONTROLS = bytes(range(0x20))
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_HIGH_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_WHITESPACE = b" \t\r\n"


def parse_line(line: bytes) -> SessionMessage | Exception:
    """One line of a server's output (without its newline) as the SDK parses it: a message,
    or the error that says why it is none. One call: for frames below `BIG_FRAME_BYTES`."""
    adapter = types.jsonrpc_message_adapter
    try:
        # From the bytes: no decoded copy of a big message (pydantic checks the UTF-8 itself).
        return SessionMessage(adapter.validate_json(line, by_name=False))
    except ValueError:
        pass
    # Not a message: parsed again from the text, so that the error reads as the SDK's.
    try:
        message = adapter.validate_json(line.decode(), by_name=False)
    except ValueError as exc:  # UnicodeDecodeError and pydantic's ValidationError among them
        return exc
    return SessionMessage(message)


async def parse_off_loop(parts: Sequence[bytes]) -> SessionMessage | Exception:
    """`parse_frame` of the line made of ``parts``, on a worker thread; the loop goes on meanwhile."""
    return await offload(_join_and_parse, parts)


def _join_and_parse(parts: Sequence[bytes]) -> SessionMessage | Exception:
    return parse_frame(join_parts(parts))


async def validate_off_loop(data: bytes | str) -> types.JSONRPCMessage:
    """``jsonrpc_message_adapter.validate_json(data, by_name=False)``, the same message or the
    same ``ValidationError``; a body of `BIG_FRAME_BYTES` or more is parsed off the loop, in
    pieces. For a transport whose messages come whole (an HTTP body, an SSE event's data)."""
    if len(data) < BIG_FRAME_BYTES:
        return types.jsonrpc_message_adapter.validate_json(data, by_name=False)
    return await offload(_validate, data)


def _validate(data: bytes | str) -> types.JSONRPCMessage:
    line: bytes | bytearray
    if isinstance(data, str):  # encoded a piece at a time, as one call would hold the GIL
        line = join_parts([data[i : i + _PIECE].encode("utf-8") for i in range(0, len(data), _PIECE)])
    else:
        line = data
    message = _parse_in_pieces(line, _LONG_LITERAL, _PIECE)
    if message is None:
        return types.jsonrpc_message_adapter.validate_json(data, by_name=False)
    return message


def join_parts(parts: Sequence[bytes]) -> bytearray:
    """``parts`` as one buffer, copied a part at a time (``b"".join`` is one long call)."""
    # Grown a part at a time: a buffer allocated whole is zeroed whole, in one long call.
    buffer = bytearray()
    for part in parts:
        buffer += part
    return buffer


def parse_frame(
    line: bytes | bytearray, *, long_literal: int = _LONG_LITERAL, piece: int = _PIECE
) -> SessionMessage | Exception:
    """``line`` parsed as `parse_line` parses it (same message, same error), in pieces that let
    other threads run: meant for a worker thread (see the module's docstring).

    ``long_literal`` and ``piece`` are for tests (small values exercise the cutting).
    """
    message = _parse_in_pieces(line, long_literal, piece)
    if message is None:
        return parse_line(bytes(line))
    return SessionMessage(message)


class _Unusual(Exception):
    """The frame holds something the piecewise parse leaves to the exact one."""


def _parse_in_pieces(line: bytes | bytearray, long_literal: int, piece: int) -> types.JSONRPCMessage | None:
    """The message, or None when the exact parse must decide (an error, or nothing to cut)."""
    try:
        literals, keys = _long_literals(line, long_literal, piece)
        if not literals:
            return None
        token = secrets.token_hex(8)
        holders: dict[str, str] = {}
        skeleton: list[bytes | bytearray] = []
        previous = 0
        for number, (start, end, text) in enumerate(literals):
            placeholder = f"actors-frame:{token}:{number}"
            holders[placeholder] = text
            skeleton += [line[previous:start], b'"', placeholder.encode(), b'"']
            previous = end
        skeleton.append(line[previous:])
        raw = b"".join(skeleton)
        structure = json.loads(raw.decode("utf-8"))
        filler = _Filler(holders, keys, check_surrogates=_SURROGATE_ESCAPE.search(raw) is not None)
        structure = filler.fill(structure)
        if filler.filled != len(holders):
            return None
        return types.jsonrpc_message_adapter.validate_python(structure, by_name=False)
    except (_Unusual, ValueError, RecursionError):  # ValueError: JSON, UTF-8 and validation errors
        return None


def _long_literals(
    line: bytes | bytearray, long_literal: int, piece: int
) -> tuple[list[tuple[int, int, str]], bool]:
    """Every string literal at least ``long_literal`` bytes long, as (start, end, decoded text),
    start at its opening quote, end after its closing one; and whether one of them is a key.

    Outside a string JSON has no quote: quotes pair up, the first of a pair opening a literal
    and the next one not escaped (not after an odd run of backslashes) closing it.
    """
    literals: list[tuple[int, int, str]] = []
    keys = False
    find = line.find
    position = 0
    while (opening := find(b'"', position)) >= 0:
        closing = opening
        while True:
            closing = find(b'"', closing + 1)
            if closing < 0:
                raise _Unusual("an unterminated string")
            before = closing
            while line[before - 1] == _BACKSLASH:
                before -= 1
            if (closing - before) % 2 == 0:
                break
        position = closing + 1
        if closing - opening - 1 >= long_literal:
            literals.append((opening, position, _decode_literal(line, opening + 1, closing, piece)))
            after = position
            while after < len(line) and line[after] in _WHITESPACE:
                after += 1
            keys = keys or line[after : after + 1] == b":"
    return literals, keys


def _decode_literal(line: bytes | bytearray, start: int, end: int, piece: int) -> str:
    """The text of the string literal whose body is ``line[start:end]``, a piece at a time."""
    texts: list[str] = []
    while start < end:
        cut = _cut_point(line, start, min(start + piece, end), end)
        texts.append(_decode_piece(line[start:cut]))
        start = cut
    return "".join(texts)


def _cut_point(line: bytes | bytearray, start: int, cut: int, end: int) -> int:
    """A place at or near ``cut`` where a literal's body may be cut: not inside a UTF-8
    sequence, nor inside an escape, nor between the two escapes of a surrogate pair."""
    if cut >= end:
        return end
    while cut > start + 1 and line[cut] & 0xC0 == 0x80:
        cut -= 1
    # An escape is at most 6 bytes, a pair 12: with no backslash in the 12 before the cut,
    # the cut is outside any escape and no escape just before it can be half of a pair.
    backslash = line.rfind(b"\\", max(start, cut - 12), cut)
    if backslash < 0:
        return cut
    run = backslash
    while run > start and line[run - 1] == _BACKSLASH:
        run -= 1
    if (backslash - run) % 2 == 1:  # an even run: this backslash is the escaped one
        escape_end = backslash + 1
    elif line[backslash + 1] == ord("u"):
        escape_end = backslash + 6
    else:
        escape_end = backslash + 2
    cut = max(cut, escape_end)
    if (
        cut == escape_end
        and _HIGH_SURROGATE_ESCAPE.fullmatch(line[backslash:escape_end])
        and line[cut : cut + 2] == b"\\u"
    ):
        cut += 6  # keep the pair's second half with its first
    return min(cut, end)


def _decode_piece(body: bytes | bytearray) -> str:
    """One piece of a literal's body (cut by `_cut_point`) as text, as strictly as pydantic."""
    text = body.decode("utf-8")  # strict: a UnicodeDecodeError is a ValueError
    if body.find(b"\\") < 0:
        if len(body.translate(None, _CONTROLS)) != len(body):  # far faster than a regex
            raise _Unusual("a control character in a string")
        return text
    decoded = json.loads('"' + text + '"')  # strict: refuses control characters too
    if not isinstance(decoded, str):
        raise _Unusual("not a string")
    if _SURROGATE_ESCAPE.search(body) and _LONE_SURROGATE.search(decoded):
        raise _Unusual("a lone surrogate")  # pydantic refuses one; json takes it
    return decoded


class _Filler:
    """Puts the long strings back in place of their placeholders in the parsed structure."""

    def __init__(self, holders: dict[str, str], keys: bool, *, check_surrogates: bool) -> None:
        self._holders = holders
        self._keys = keys
        self._check_surrogates = check_surrogates
        self.filled = 0

    def fill(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, str | list | dict):
                    value[index] = self.fill(item)
            return value
        if isinstance(value, dict):
            if self._keys or self._check_surrogates:
                return {self._text(key): self.fill(item) for key, item in value.items()}
            for key, item in value.items():
                if isinstance(item, str | list | dict):
                    value[key] = self.fill(item)
            return value
        return value

    def _text(self, text: str) -> str:
        held = self._holders.get(text)
        if held is not None:
            self.filled += 1
            return held
        if self._check_surrogates and _LONE_SURROGATE.search(text):
            raise _Unusual("a lone surrogate")
        return text


# -- encoding ------------------------------------------------------------------------------


def is_big_message(message: types.JSONRPCMessage) -> bool:
    """Whether ``message`` may encode to `BIG_FRAME_BYTES` or more (counting only its text:
    cheap for a small message, and it stops counting once it passes)."""
    payload: list[Any] = []
    if isinstance(message, types.JSONRPCRequest | types.JSONRPCNotification):
        payload = [message.method, message.params]
    elif isinstance(message, types.JSONRPCResponse):
        payload = [message.result]
    else:
        payload = [message.error.message, message.error.data]
    return _at_least(payload, BIG_FRAME_BYTES // 2) <= 0


def _at_least(value: Any, room: int) -> int:
    """``room`` less the length of the text in ``value`` (keys and strings), stopping at 0."""
    if isinstance(value, str):
        return room - len(value)
    if isinstance(value, dict):
        for key, item in value.items():
            room = _at_least(item, room - len(key) - 4)
            if room <= 0:
                return room
        return room
    if isinstance(value, list | tuple):
        for item in value:
            room = _at_least(item, room - 2)
            if room <= 0:
                return room
        return room
    return room - 8


async def encode_off_loop(message: types.JSONRPCMessage) -> list[bytes]:
    """`encode_frame` on a worker thread; the loop goes on meanwhile."""
    return await offload(encode_frame, message)


def encode_frame(message: types.JSONRPCMessage, *, piece: int = _PIECE) -> list[bytes]:
    """``message`` as one JSON line (newline included), in pieces of about ``piece`` bytes.

    The same JSON as ``model_dump_json(by_alias=True, exclude_unset=True)``, up to spacing,
    encoded a piece at a time. Raises ``ValueError`` when it cannot be encoded (a lone
    surrogate, a value JSON has not).
    """
    data = message.model_dump(by_alias=True, exclude_unset=True, mode="json")
    texts: list[str] = []
    _Encoder(texts, piece).encode(data)
    texts.append("\n")
    return list(_batches(texts, piece))


def _batches(texts: Iterable[str], piece: int) -> Iterable[bytes]:
    batch: list[str] = []
    size = 0
    for text in texts:
        batch.append(text)
        size += len(text)
        if size >= piece:
            yield "".join(batch).encode("utf-8")
            batch, size = [], 0
    if batch:
        yield "".join(batch).encode("utf-8")


class _Encoder:
    """Compact JSON of plain data, as a list of short texts; small values in one call each."""

    def __init__(self, out: list[str], piece: int) -> None:
        self._out = out
        self._piece = piece

    def encode(self, value: Any) -> None:
        out = self._out
        if isinstance(value, str):
            if len(value) <= self._piece:
                out.append(encode_basestring(value))
                return
            out.append('"')
            for start in range(0, len(value), self._piece):
                out.append(encode_basestring(value[start : start + self._piece])[1:-1])
            out.append('"')
        elif isinstance(value, dict | list | tuple) and _at_least(value, self._piece) <= 0:
            self._container(value)
        else:
            out.append(json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False))

    def _container(self, value: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> None:
        out = self._out
        if isinstance(value, dict):
            out.append("{")
            for index, (key, item) in enumerate(value.items()):
                if index:
                    out.append(",")
                if not isinstance(key, str):
                    raise ValueError(f"an object key that is not a string: {key!r}")
                self.encode(key)
                out.append(":")
                self.encode(item)
            out.append("}")
        else:
            out.append("[")
            for index, item in enumerate(value):
                if index:
                    out.append(",")
                self.encode(item)
            out.append("]")
