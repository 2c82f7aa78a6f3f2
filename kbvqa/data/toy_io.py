"""Saving and loading a toy world: JSON/JSONL records, PNG images and a manifest.

Layout of a saved world::

    manifest.json        version, seed, config, sha256 of every JSON file, a digest of all pixels
    families.jsonl entities.jsonl documents.jsonl concepts.jsonl mc_rules.json
    kbvqa_train.jsonl kbvqa_test.jsonl mc_train.jsonl mc_kb.jsonl mc_test.jsonl
    literature.jsonl lit_questions.jsonl
    images/<view id>.png  every canonical picture and query view, rendered once

Records are the schema's ``to_dict`` plus ``"image": "images/<view id>.png"``. JSON is written
with sorted keys and fixed separators, so two builds with one seed give identical bytes. The
manifest digests *pixels* rather than PNG bytes, so its hash (held by the tests) does not depend
on the zlib version that compressed the PNGs.

Leaves out: building a world (``toyworld.py``).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from kbvqa.data.schema import Document, KBExample, LiteratureItem, Query
from kbvqa.data.toy_entities import Entity, Family
from kbvqa.data.toy_lit_concepts import Concept

QUERY_SPLITS = ("kbvqa_train", "kbvqa_test", "mc_train", "mc_kb", "mc_test", "lit_questions")


def _dumps(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _jsonl(rows) -> bytes:
    return "".join(_dumps(r) + "\n" for r in rows).encode("utf-8")


def _with_image(record, view_id: str | None) -> dict:
    d = record.to_dict()
    if view_id is not None:
        d["image"] = f"images/{view_id}.png"
    return d


def record_files(world) -> dict[str, bytes]:
    """The bytes of every JSON/JSONL file of a saved world, by file name."""
    files = {
        "families.jsonl": _jsonl({**f.__dict__, "member_ids": list(f.member_ids)} for f in world.families),
        "entities.jsonl": _jsonl(e.to_dict() for e in world.entities),
        "documents.jsonl": _jsonl(_with_image(d, d.meta.get("image_id")) for d in world.documents),
        "concepts.jsonl": _jsonl({"id": c.id, "kind": c.kind, "names": list(c.names), "facts": c.facts}
                                 for c in world.concepts),
        "mc_rules.json": (_dumps(world.mc_rules) + "\n").encode("utf-8"),
        "literature.jsonl": _jsonl(x.to_dict() for x in world.literature),
    }
    for split in QUERY_SPLITS:
        files[f"{split}.jsonl"] = _jsonl(_with_image(q, q.meta.get("view_id")) for q in getattr(world, split))
    return files


def save_world(world, directory=None) -> dict:
    """Write ``world`` under ``directory`` (created) and return its manifest.

    With ``directory=None`` nothing is written: the manifest is computed in memory (every picture
    is still rendered once, for the pixel digest).
    """
    root = Path(directory) if directory is not None else None
    if root is not None:
        (root / "images").mkdir(parents=True, exist_ok=True)
    files = record_files(world)
    pixels = hashlib.sha256()
    view_ids = sorted(world.view_ids())  # sorted: a loaded world digests the same way
    for view_id in view_ids:
        img = world.image_of(view_id)
        pixels.update(view_id.encode("utf-8") + b"\0" + img.tobytes())
        if root is not None:
            img.save(root / "images" / f"{view_id}.png", format="PNG")
    manifest = {"toyworld_version": world.version, "seed": world.seed, "config": world.config.to_dict(),
                "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())},
                "images": {"count": len(view_ids), "pixels_sha256": pixels.hexdigest()},
                "stats": world.stats()}
    if root is not None:
        for name, data in files.items():
            (root / name).write_bytes(data)
        (root / "manifest.json").write_bytes(manifest_bytes(manifest))
    return manifest


def manifest_bytes(manifest: dict) -> bytes:
    """The exact bytes of ``manifest.json`` (tests hash these)."""
    return (json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _absolute(d: dict, root: Path) -> dict:
    if isinstance(d.get("image"), str):
        d["image"] = str(root / d["image"])
    return d


def load_parts(directory) -> dict:
    """The keyword arguments of ``ToyWorld`` read back from a saved world (images are paths)."""
    root = Path(directory)
    manifest_path = root / "manifest.json"
    if not manifest_path.is_file():
        raise ValueError(f"no toy world at {root} (manifest.json missing)")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    parts = {"seed": manifest["seed"], "config": manifest["config"],
             "version": manifest["toyworld_version"],
             "families": [Family.from_dict(d) for d in _read_jsonl(root / "families.jsonl")],
             "entities": [Entity.from_dict(d) for d in _read_jsonl(root / "entities.jsonl")],
             "documents": [Document.from_dict(_absolute(d, root))
                           for d in _read_jsonl(root / "documents.jsonl")],
             "concepts": [Concept(d["id"], d["kind"], tuple(d["names"]), d["facts"])
                          for d in _read_jsonl(root / "concepts.jsonl")],
             "mc_rules": json.loads((root / "mc_rules.json").read_text(encoding="utf-8")),
             "literature": [LiteratureItem.from_dict(d) for d in _read_jsonl(root / "literature.jsonl")]}
    for split in QUERY_SPLITS:
        cls = KBExample if split == "mc_kb" else Query
        parts[split] = [cls.from_dict(_absolute(d, root)) for d in _read_jsonl(root / f"{split}.jsonl")]
    parts["image_paths"] = {p.stem: str(p) for p in sorted((root / "images").glob("*.png"))}
    return parts
