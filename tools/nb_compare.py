"""Compare two executions of the same notebook, run-dependent details removed (issue #9 §2:
"executing the book twice gives the same outputs, timings aside").

``normalise_notebook`` turns an executed notebook into, per code cell, a list of normalised outputs
(a kind such as ``stream:stdout`` or a MIME type, and comparable text); ``compare_notebooks`` lists
where two executions differ. What is stripped, and why (everything else must match exactly):

- notebook metadata (kernel and language versions, the saved widget state with its progress-bar
  rates) and cell metadata (``execution`` timestamps): they describe the run, not the content;
- execution counts: they only count cells run, and a re-run of one cell changes them;
- output metadata (image sizes in inches, ``isolated`` flags): presentation, not content;
- durations in text (``1.3 s``, ``250 ms``, ``2 min``, ``0.5 seconds``): wall time varies;
- tqdm bars: redraws (by carriage return, or one line per flush after myst-nb's merge: only the
  bar's last state is kept) and the ``[elapsed<remaining, rate]`` block (``12.3it/s``);
- memory addresses (``<object at 0x7f...>``): the allocator's choice;
- 32-hex-digit ids glued to a name (matplotlib animations' ``_anim_img<uuid4 hex>``): fresh per run;
- widget model ids (``model_id`` in ``application/vnd.jupyter.widget-view+json``): fresh uuids;
- random ids in HTML: pandas Styler's ``T_xxxxx`` table ids and any uuid; temporary paths;
- how the kernel split a cell's stream into messages: both sides are compared as the book renders
  them, after myst-nb's ``coalesce_streams`` (every stream of one name in a cell joined into its
  first, each piece right-stripped, ``\r`` and backspace redraws resolved, stderr after stdout).
  Flush timing decides the split, so a raw comparison would report noise. ``make book``'s copies
  in ``_build/jupyter_execute/`` hold that merge half-done (myst-nb 1.4 merges into the first
  stream in place and saves the later pieces too): pass ``rendered=True`` for them, and only the
  first stream of each name is kept;
- line breaks and runs of spaces inside stream text: ipykernel flushes on a timer, so a message can
  end mid-line (``print("terms:", terms)`` arrived once as ``"terms:"`` + ``" [...]"``), and the
  merge above then puts a newline at the split. Streams are compared with every whitespace run
  read as one space: the same words in the same order, wherever the flush fell;
- cells tagged ``timing`` (cell metadata ``tags``): their outputs are measured latencies (a table of
  milliseconds, a plot of them) that no text rule can tell from content; only their kinds are
  compared (the same outputs appear), not their values;
- PNG/JPEG/GIF bytes: images are compared as decoded pixels, so encoder metadata chunks do not
  count; a picture that differs by one pixel still does.

Leaves out: executing notebooks (``tools.nb_execute``), and numeric tolerance: a float printed
differently is a difference (the book promises the same outputs, and seeds make that possible).
Run: ``python -m tools.nb_compare A.ipynb B.ipynb`` or ``python -m tools.nb_compare DIR_A DIR_B``.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

TIMING_TAG = "timing"   # a cell whose outputs are measured times: compared by kind only
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif")

# (pattern, replacement), applied in this order to every text output.
TEXT_RULES = [
    (re.compile(r"\[[\d:]+<[\d:?]+(?:,\s*[^\]]*)?\]"), "[<tqdm>]"),                  # tqdm elapsed<left, rate
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:it/s|s/it)"), "<rate>"),              # loose tqdm rates
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[-+]?\d+)?\s?"
                r"(?:ms|µs|us|ns|s|sec|secs|seconds?|mins?|minutes?)\b"), "<time>"),  # durations
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x<addr>"),                                  # memory addresses
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"(?<=[A-Za-z_])[0-9a-f]{32}\b"), "<hexid>"),                         # animation element ids
    (re.compile(r"\bT_[0-9a-f]{5}(?=[_\s\"'>#.])"), "T_<id>"),                       # pandas Styler ids
    (re.compile(r"/tmp/[\w./-]+"), "<tmp>"),                                          # temporary paths
]


@dataclass(frozen=True)
class OutputDifference:
    """One place where two executions differ after normalisation."""

    notebook: str   # the notebook's name
    cell: int       # index of the cell in the notebook (0-based, markdown cells counted)
    output: int     # index of the normalised output in that cell (-1: the cell as a whole)
    kind: str       # "stream:stdout", a MIME type, "source", "outputs" (their number or kinds)
    first: str      # the first differing line of the first execution ("" when it has none)
    second: str     # the same line of the second execution

    def __str__(self) -> str:
        return (f"{self.notebook} cell {self.cell} output {self.output} [{self.kind}]:\n"
                f"  - {self.first!r}\n  + {self.second!r}")


TQDM_LINE = re.compile(r"^(?P<desc>.*?)\s*\d{1,3}%\|")


def _last_tqdm_states(lines: list[str]) -> list[str]:
    """Drop a tqdm bar line when the next line is the same bar later on (how many intermediate
    states were drawn depends on speed; the last one does not)."""
    keep = []
    for i, line in enumerate(lines):
        bar, following = TQDM_LINE.match(line), TQDM_LINE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if bar and following and bar.group("desc") == following.group("desc"):
            continue
        keep.append(line)
    return keep


def normalise_text(text: str) -> str:
    """Text with tqdm redraws collapsed and durations, addresses and random ids replaced."""
    text = "\n".join(_last_tqdm_states([line.rsplit("\r", 1)[-1] for line in text.split("\n")]))
    for pattern, replacement in TEXT_RULES:
        text = pattern.sub(replacement, text)
    return text


def _as_text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _image_digest(data: str) -> str:
    """A hash of the decoded pixels (size, mode, bytes); of the raw bytes when it does not decode."""
    try:
        raw = base64.b64decode(_as_text(data).strip())
    except (ValueError, TypeError):
        return "undecodable:" + hashlib.sha256(_as_text(data).encode()).hexdigest()
    try:
        from PIL import Image

        with Image.open(io.BytesIO(raw)) as img:
            img.load()
            head = f"{img.size}{img.mode}".encode()
            return "pixels:" + hashlib.sha256(head + img.tobytes()).hexdigest()
    except Exception:  # not an image PIL reads: compare the bytes themselves
        return "bytes:" + hashlib.sha256(raw).hexdigest()


def _normalise_data(mime: str, value) -> str:
    if mime in IMAGE_MIMES:
        return _image_digest(value)
    if mime == WIDGET_MIME:
        view = dict(value) if isinstance(value, dict) else {}
        view.pop("model_id", None)
        return json.dumps(view, sort_keys=True)
    if isinstance(value, (dict, list)) and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return normalise_text(json.dumps(value, sort_keys=True))
    if mime == "image/svg+xml":
        return normalise_text(re.sub(r"<metadata>.*?</metadata>", "", _as_text(value), flags=re.S))
    return normalise_text(_as_text(value))


def render_streams(outputs: list, rendered: bool = False) -> list[dict]:
    """The outputs as myst-nb renders them (``coalesce_streams`` of myst-nb 1.4, re-implemented on
    copies): each stream name's pieces joined into its first, stderr moved after stdout.
    ``rendered=True``: ``outputs`` come from ``_build/jupyter_execute`` and are merged already."""
    out, firsts = [], {}
    for output in outputs or []:
        output = dict(output)
        if output.get("output_type") != "stream":
            out.append(output)
            continue
        name, text = output.get("name", ""), _as_text(output.get("text", ""))
        if name in firsts:
            if not rendered and text.rstrip():
                firsts[name]["text"] += text.rstrip() + "\n"
            continue
        output["text"] = text if rendered else text.rstrip() + "\n"
        firsts[name] = output
        out.append(output)
    for i, output in enumerate(out):
        if (output.get("output_type") == "stream" and output.get("name") == "stderr" and i + 1 < len(out)
                and out[i + 1].get("output_type") == "stream" and out[i + 1].get("name") == "stdout"):
            out.insert(i, out.pop(i + 1))
    return out


def normalise_outputs(outputs: list, rendered: bool = False) -> list[tuple[str, str]]:
    """A cell's outputs as ``(kind, comparable text)`` pairs, streams merged as the book shows them
    (``render_streams``)."""
    out: list[tuple[str, str]] = []
    for output in render_streams(outputs, rendered):
        kind = output.get("output_type", "")
        if kind == "stream":
            text = re.sub(r"[^\n]\x08", "", _as_text(output.get("text", "")))
            out.append((f"stream:{output.get('name', '')}", normalise_text(text)))
        elif kind == "error":
            out.append(("error", normalise_text(f"{output.get('ename')}: {output.get('evalue')}")))
        else:
            data = sorted((output.get("data") or {}).items())
            out.extend((mime, _normalise_data(mime, value)) for mime, value in data)
    return out


def normalise_notebook(nb: dict, rendered: bool = False) -> dict[int, list[tuple[str, str]]]:
    """``{cell index: normalised outputs}`` for every code cell of an executed notebook
    (``rendered``: a myst-nb copy from ``_build/jupyter_execute``, see ``render_streams``)."""
    return {i: normalise_outputs(cell.get("outputs", []), rendered)
            for i, cell in enumerate(nb.get("cells", [])) if cell.get("cell_type") == "code"}


def _first_difference(a: str, b: str) -> tuple[str, str]:
    la, lb = a.splitlines(), b.splitlines()
    for x, y in zip(la, lb):
        if x != y:
            return x[:300], y[:300]
    if len(la) != len(lb):
        i = min(len(la), len(lb))
        return (la[i][:300] if i < len(la) else ""), (lb[i][:300] if i < len(lb) else "")
    return a[:300], b[:300]   # same lines, different trailing whitespace


def compare_notebooks(first: dict, second: dict, name: str = "notebook", first_rendered: bool = False,
                      second_rendered: bool = False) -> list[OutputDifference]:
    """Every difference between two executions of one notebook, in cell order ([] when equal).
    A cell whose source differs is reported once as ``source`` (not a non-determinism).
    ``*_rendered``: that side is a myst-nb copy from ``_build/jupyter_execute``."""
    diffs: list[OutputDifference] = []
    cells_a, cells_b = first.get("cells", []), second.get("cells", [])
    if len(cells_a) != len(cells_b):
        diffs.append(OutputDifference(name, -1, -1, "cells", f"{len(cells_a)} cells", f"{len(cells_b)} cells"))
        return diffs
    norm_a, norm_b = normalise_notebook(first, first_rendered), normalise_notebook(second, second_rendered)
    for i in sorted(norm_a):
        src_a, src_b = _as_text(cells_a[i].get("source", "")), _as_text(cells_b[i].get("source", ""))
        if src_a != src_b:
            diffs.append(OutputDifference(name, i, -1, "source", *_first_difference(src_a, src_b)))
            continue
        outs_a, outs_b = norm_a[i], norm_b.get(i, [])
        if [k for k, _ in outs_a] != [k for k, _ in outs_b]:
            diffs.append(OutputDifference(name, i, -1, "outputs", " ".join(k for k, _ in outs_a),
                                          " ".join(k for k, _ in outs_b)))
            continue
        if TIMING_TAG in (cells_a[i].get("metadata") or {}).get("tags", []):
            continue
        for j, ((kind, text_a), (_, text_b)) in enumerate(zip(outs_a, outs_b)):
            if text_a != text_b and not (kind.startswith("stream:") and _same_words(text_a, text_b)):
                diffs.append(OutputDifference(name, i, j, kind, *_first_difference(text_a, text_b)))
    return diffs


def _same_words(a: str, b: str) -> bool:
    """Equal with every whitespace run read as one space (where a flush split a line, myst-nb's
    merge put a newline)."""
    return re.sub(r"\s+", " ", a).strip() == re.sub(r"\s+", " ", b).strip()


def is_myst_nb_copy(path: Path) -> bool:
    """True for the executed copies myst-nb writes (under a ``jupyter_execute`` folder)."""
    return "jupyter_execute" in Path(path).resolve().parts


def compare_files(first: Path, second: Path) -> list[OutputDifference]:
    """``compare_notebooks`` on two .ipynb files (myst-nb copies recognised by their folder)."""
    a, b = (json.loads(Path(p).read_text(encoding="utf-8")) for p in (first, second))
    return compare_notebooks(a, b, Path(first).stem, is_myst_nb_copy(first), is_myst_nb_copy(second))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Compare two executions of notebooks (timings aside).")
    ap.add_argument("first", type=Path, help="an executed .ipynb, or a folder of them")
    ap.add_argument("second", type=Path, help="the same notebook(s) executed again")
    args = ap.parse_args(argv)
    if args.first.is_dir():
        pairs = [(p, args.second / p.name) for p in sorted(args.first.glob("*.ipynb"))]
        missing = [str(b) for _, b in pairs if not b.exists()]
        pairs = [(a, b) for a, b in pairs if b.exists()]
    else:
        pairs, missing = [(args.first, args.second)], []
    diffs = [d for a, b in pairs for d in compare_files(a, b)]
    for d in diffs:
        print(d)
    print(f"{len(pairs)} notebook(s) compared, {len(diffs)} difference(s); missing: {missing or 'none'}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
