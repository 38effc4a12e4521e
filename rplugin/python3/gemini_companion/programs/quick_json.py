"""JSON read and written through CPython's C accelerator alone, for the hook program that every
CLI event starts afresh: the `json` package imports `re` (with `enum` and `functools`), 15 ms of
a 25 ms start on a loaded machine. Reads what `json.loads` reads (NaN and Infinity included,
nesting bounded by RecursionError); writes the str/dict/list/None/bool/int values the hook sends,
ASCII only, as `json.dumps` does.
"""

from __future__ import annotations

import _json

WHITESPACE = " \t\n\r"


class _Context:
    """What the C scanner reads from a JSONDecoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # 'NaN', 'Infinity', '-Infinity'


_scan = _json.make_scanner(_Context())  # type: ignore[arg-type]  # it reads only the attributes above


def loads(text: str | bytes) -> object:
    """`json.loads` of a str, or of UTF-8 bytes; ValueError for anything that is not one JSON value."""
    if isinstance(text, bytes):
        text = text.decode()  # UnicodeDecodeError is a ValueError
    start = len(text) - len(text.lstrip(WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as error:
        raise ValueError(f"no JSON value at {error.value}") from None
    if text[end:].strip(WHITESPACE):
        raise ValueError(f"extra data at {end}")
    return value


def dumps(value: object) -> str:
    """`json.dumps(value)` for the hook's values."""
    if isinstance(value, str):
        return _json.encode_basestring_ascii(value)
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, dict):
        return "{" + ", ".join(f"{dumps(str(key))}: {dumps(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dumps(item) for item in value) + "]"
    raise TypeError(f"not sent: {type(value).__name__}")
