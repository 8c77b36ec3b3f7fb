"""Robust extraction of JSON from model text."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from ..errors import LLMOutputError

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _loads_lenient(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        pass
    fixed = _TRAILING_COMMA.sub(r"\1", candidate)
    try:
        return json.loads(fixed)
    except json.JSONDecodeError:
        pass
    # Small models often answer with Python literals: single quotes, True/None.
    try:
        value = ast.literal_eval(fixed)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("not JSON") from None
    if isinstance(value, (dict, list)):
        return value
    raise ValueError("not a JSON object or array")


def extract_json(text: str) -> Any:
    """Return the first JSON object or array found in `text`.

    Tries, in order: the whole text, fenced ```json blocks, then every `{` or `[` position
    with a streaming decoder (so prose before and after is ignored).

    Raises:
        LLMOutputError: no JSON object or array could be parsed.
    """
    stripped = text.strip()
    if not stripped:
        raise LLMOutputError("Expected JSON but the model returned an empty answer", text=text)
    candidates = [stripped, *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        try:
            value = _loads_lenient(candidate)
        except ValueError:
            continue
        if isinstance(value, (dict, list)):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            # try a lenient parse of the balanced span
            span = _balanced_span(text, match.start())
            if span is None:
                continue
            try:
                value = _loads_lenient(span)
            except ValueError:
                continue
        if isinstance(value, (dict, list)):
            return value
    raise LLMOutputError("Expected a JSON object or array in the model's answer", text=text)


def _balanced_span(text: str, start: int) -> str | None:
    """The bracket-balanced substring starting at `start`, ignoring brackets in strings."""
    opening = text[start]
    closing = "}" if opening == "{" else "]"
    depth = 0
    quote: str | None = None
    escaped = False
    for i in range(start, min(len(text), start + 100_000)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1] if ch == closing else None
    return None


def _cut_off_string(raw: str, key: str) -> str:
    """The text of string field `key` in JSON cut off at the token limit (unterminated)."""
    match = re.search(rf'"{re.escape(key)}"\s*:\s*"((?:[^"\\]|\\.)*)', raw, re.DOTALL)
    if not match:
        return ""
    text = match.group(1)
    try:
        return json.loads(f'"{text}"').strip()
    except ValueError:  # cut inside an escape sequence
        return text.replace('\\n', "\n").strip()


def salvage_text(raw: str, key: str = "") -> str:
    """The message in an answer that was not the JSON asked for: the longest string of a
    JSON object if there is one (small models invent their own keys), else field `key` of
    JSON cut off at the token limit, else the raw text."""
    try:
        value = extract_json(raw)
    except LLMOutputError:
        return (key and _cut_off_string(raw, key)) or raw or "(no usable answer)"
    strings: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            strings.append(node)
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    best = max(strings, key=len, default="").strip()
    return best or raw or "(no usable answer)"
