"""The four papers' prompt templates, one ``.txt`` file per template, and how to fill them.

File format. A template file starts with header lines ``# source: <paper> <table/section>``
(every file has one) and optional ``# note: ...`` lines, then one blank line, then the template
text exactly as the model sees it. A slot is ``{name}`` with ``name`` a lower-case identifier
(``{question}``, ``{img_width}``); every other brace is literal text (RCTS's ``//boxed{X}``,
MOLT's ``{1, 2, 3, 4, 5}``), so the papers' text needs no escaping. Image markers ``<image>``,
``<image_1>`` ... stand where the paper puts an image.

Names. ``<paper>_<role>`` is the user turn (or the whole prompt when the paper prints one block);
``<paper>_<role>_system`` is its system turn when the paper gives one. ``..._short`` files are the
cpu-profile renderings of a long template: same slots, same output format, one or two sentences
instead of a page, because a 1.45M-parameter model pays for every token and understands none of the
instructions (it learns the task from the pretraining mix, ``kbvqa.models.pretrain_mix``).
The gpu profile must use the papers' text (``short=False``, the default).

API: ``list_prompts()``, ``load_prompt(name)``, ``prompt_source(name)``, ``prompt_slots(name)``,
``render_prompt(name, **slots)`` (``ValueError`` on a missing or unknown slot), and
``render_chat(name, images=(), short=False, **slots)``, which returns a chat in the format of
``kbvqa.models.chat`` (system turn if the template has one, user turn with the images placed at
the image markers, or first when the template has none).

Leaves out: choosing what goes into the slots (the chapters, ``kbvqa.prompts.formats``) and
parsing the answers (``kbvqa.parsers``).
"""
from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["IMAGE_MARKER", "list_prompts", "load_prompt", "prompt_slots", "prompt_source",
           "render_chat", "render_prompt", "system_name"]

SLOT = re.compile(r"\{([a-z][a-z0-9_]*)\}")
IMAGE_MARKER = re.compile(r"<image(?:_\d+)?>")
_HEADER = re.compile(r"^# ?(\w+):\s*(.*)$")


def _files() -> dict[str, str]:
    folder = resources.files(__name__)
    return {f.name[:-4]: f.name for f in folder.iterdir() if f.name.endswith(".txt")}


@cache
def _read(name: str) -> tuple[dict[str, str], str]:
    """(header fields, template text) of ``name``; raises ``ValueError`` for an unknown name."""
    files = _files()
    if name not in files:
        raise ValueError(f"unknown prompt {name!r}; known: {sorted(files)}")
    raw = resources.files(__name__).joinpath(files[name]).read_text(encoding="utf-8")
    lines = raw.split("\n")
    header: dict[str, str] = {}
    i = 0
    while i < len(lines) and lines[i].startswith("#"):  # the header ends at the first blank line
        m = _HEADER.match(lines[i])
        if m:
            key = m.group(1).lower()
            header[key] = (header[key] + " " + m.group(2)) if key in header else m.group(2)
        i += 1
    if i and (i >= len(lines) or lines[i] != ""):
        raise ValueError(f"prompt file {files[name]}: the header must be followed by one blank line")
    return header, "\n".join(lines[i + 1 if i else 0:]).rstrip("\n")


def list_prompts() -> list[str]:
    """Every template name, sorted (system turns and short renderings included)."""
    return sorted(_files())


def load_prompt(name: str) -> str:
    """The template text of ``name`` (header removed, slots unfilled)."""
    return _read(name)[1]


def prompt_source(name: str) -> str:
    """The ``# source:`` line of ``name`` ("" if the file has none, which a test forbids)."""
    return _read(name)[0].get("source", "")


def prompt_slots(name: str) -> list[str]:
    """The slot names of ``name`` in order of first appearance."""
    return list(dict.fromkeys(SLOT.findall(load_prompt(name))))


def _fill(name: str, template: str, slots: dict[str, Any]) -> str:
    wanted = set(SLOT.findall(template))
    missing = sorted(wanted - set(slots))
    if missing:
        raise ValueError(f"prompt {name!r}: missing slot(s) {missing}; it needs {sorted(wanted)}")
    unknown = sorted(set(slots) - wanted)
    if unknown:
        raise ValueError(f"prompt {name!r}: unknown slot(s) {unknown}; it has {sorted(wanted)}")
    # one pass, so a value that itself contains "{x}" is never filled again
    return SLOT.sub(lambda m: str(slots[m.group(1)]), template)


def render_prompt(name: str, **slots: Any) -> str:
    """``name`` with every slot filled; a missing or unknown slot raises ``ValueError``."""
    return _fill(name, load_prompt(name), slots)


def _variant(name: str, short: bool) -> str:
    files = _files()
    if name not in files:
        raise ValueError(f"unknown prompt {name!r}; known: {sorted(files)}")
    return f"{name}_short" if short and f"{name}_short" in files else name


def system_name(name: str, short: bool = False) -> str | None:
    """The system-turn template that goes with ``name`` (its short rendering if asked), or None."""
    files = _files()
    base = f"{name}_system"
    if base not in files:
        return None
    return f"{base}_short" if short and f"{base}_short" in files else base


def _user_parts(text: str, images: list) -> list[dict[str, Any]]:
    markers = IMAGE_MARKER.findall(text)
    if not markers:
        return [{"type": "image", "image": im} for im in images] + [{"type": "text", "text": text}]
    if len(markers) != len(images):
        raise ValueError(f"the prompt has {len(markers)} image marker(s) but {len(images)} image(s) were given")
    parts: list[dict[str, Any]] = []
    pieces = IMAGE_MARKER.split(text)
    for k, piece in enumerate(pieces):
        if piece:
            parts.append({"type": "text", "text": piece})
        if k < len(images):
            parts.append({"type": "image", "image": images[k]})
    return parts


def render_chat(name: str, images: Any = (), short: bool = False, **slots: Any) -> list[dict]:
    """A one-turn chat for template ``name``: its system turn (if any) and the user turn.

    ``slots`` fill both turns; each must be used by one of them. ``images`` (image references, in
    order) replace the image markers of the user turn; a template without markers gets them first.
    With ``short=True`` the ``_short`` renderings are used where they exist (cpu profile).
    """
    images = [images] if images is not None and not isinstance(images, (list, tuple)) else list(images or [])
    user_name = _variant(name, short)
    sys_name = system_name(name, short)
    templates = [(user_name, load_prompt(user_name))]
    if sys_name is not None:
        templates.insert(0, (sys_name, load_prompt(sys_name)))
    used = {s for _, t in templates for s in SLOT.findall(t)}
    unknown = sorted(set(slots) - used)
    if unknown:
        raise ValueError(f"prompt {name!r}: unknown slot(s) {unknown}; it has {sorted(used)}")
    chat = []
    for tname, template in templates:
        text = _fill(tname, template, {k: v for k, v in slots.items() if k in set(SLOT.findall(template))})
        if tname == sys_name:
            if IMAGE_MARKER.search(text):
                raise ValueError(f"system prompt {tname!r} must not hold image markers")
            chat.append({"role": "system", "content": [{"type": "text", "text": text}]})
        else:
            chat.append({"role": "user", "content": _user_parts(text, images)})
    return chat
