"""The one prompt format every chapter hands to ``kbvqa.models.VLM``.

A *prompt* is a chat: a list of messages, each ``{"role": ..., "content": [parts]}`` where a part
is ``{"type": "text", "text": str}`` or ``{"type": "image", "image": ref}``. ``ref`` is anything
``kbvqa.data.schema.open_image`` accepts (a PIL image, a path, bytes, a zero-argument callable).
Images appear in the text exactly where their part stands (the chat template puts the family's
image placeholder there). Roles are ``"system"``, ``"user"`` and ``"assistant"``.

Three shorthands are accepted wherever a prompt is expected and turned into that form:

- ``"question"``                    -> one user message with that text;
- ``(image, "question")``           -> one user message, image first (image may be ``None``);
- a message whose content is a str  -> one text part.

``make_chat(text, image=None, system=None)`` builds the common case explicitly.
``normalise_chat`` validates (a bad prompt raises ``ValueError`` naming what is wrong) and returns
the canonical form with images opened as RGB PIL images; ``chat_images`` lists them in order.

Leaves out: rendering with a chat template and tokenising (``kbvqa.models.vlm``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbvqa.data.schema import open_image

ROLES = ("system", "user", "assistant")

Chat = list[dict[str, Any]]


def make_chat(text: str, image: Any = None, system: str | None = None) -> Chat:
    """A one-turn chat: optional system message, then a user message ``[image?, text]``."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")  # noqa: TRY004 (house style)
    chat: Chat = []
    if system is not None:
        chat.append({"role": "system", "content": [{"type": "text", "text": system}]})
    parts: list[dict[str, Any]] = []
    if image is not None:
        parts.append({"type": "image", "image": image})
    parts.append({"type": "text", "text": text})
    chat.append({"role": "user", "content": parts})
    return chat


def _normalise_part(part: Any, where: str) -> dict[str, Any]:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, dict) or "type" not in part:
        raise ValueError(f"{where}: a content part must be a dict with a 'type', got {part!r:.80}")
    kind = part["type"]
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise ValueError(f"{where}: a text part needs a str 'text'")
        return {"type": "text", "text": part["text"]}
    if kind == "image":
        if part.get("image") is None:
            raise ValueError(f"{where}: an image part needs an 'image' (PIL image, path, bytes or callable)")
        try:
            image = open_image(part["image"])
        except (OSError, ValueError) as err:
            raise ValueError(f"{where}: cannot open the image ({err})") from err
        return {"type": "image", "image": image}
    raise ValueError(f"{where}: unknown content type {kind!r}; expected 'text' or 'image'")


def normalise_chat(prompt: Any) -> Chat:
    """The canonical chat for any accepted prompt shape; raises ``ValueError`` on a bad one."""
    if isinstance(prompt, str):
        return make_chat(prompt)
    if isinstance(prompt, tuple):
        if len(prompt) != 2:
            raise ValueError(f"an (image, text) prompt must have 2 items, got {len(prompt)}")
        image, text = prompt
        return normalise_chat(make_chat(text, image=image))
    if not isinstance(prompt, list) or not prompt:
        raise ValueError("a prompt must be a str, an (image, text) tuple or a non-empty list of messages")
    chat: Chat = []
    for i, message in enumerate(prompt):
        where = f"message {i}"
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise ValueError(f"{where}: needs a 'role' in {ROLES}, got {message!r:.80}")
        content = message.get("content")
        if isinstance(content, str):
            content = [content]
        if not isinstance(content, list) or not content:
            raise ValueError(f"{where}: 'content' must be a str or a non-empty list of parts")
        parts = [_normalise_part(p, f"{where} part {j}") for j, p in enumerate(content)]
        chat.append({"role": message["role"], "content": parts})
    return chat


def normalise_prompts(prompts: Any) -> list[Chat]:
    """A batch of prompts; a single prompt (a str, a tuple or one chat) is not accepted here, so
    that ``generate("hi")`` cannot silently mean five one-letter prompts."""
    if isinstance(prompts, (str, tuple)) or not isinstance(prompts, Sequence):
        raise ValueError("prompts must be a list of prompts (wrap a single prompt in a list)")  # noqa: TRY004
    if prompts and isinstance(prompts[0], dict):
        raise ValueError("prompts looks like one chat (a list of messages): wrap it in a list")
    return [normalise_chat(p) for p in prompts]


def chat_images(chat: Chat) -> list:
    """The PIL images of a canonical chat, in the order they appear."""
    return [part["image"] for message in chat for part in message["content"] if part["type"] == "image"]


def with_answer(chat: Chat, answer: str) -> Chat:
    """The chat followed by an assistant message holding ``answer`` (used to find answer tokens)."""
    return chat + [{"role": "assistant", "content": [{"type": "text", "text": answer}]}]
