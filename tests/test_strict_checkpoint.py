"""data/tiny_vlm loads strictly: every tensor with its shape, and the fingerprint its card records."""
from __future__ import annotations

import json
import shutil

import pytest
from safetensors.torch import load_file, save_file

from kbvqa.config import DATA_DIR
from kbvqa.experiments.runs import model_fingerprint
from kbvqa.models.strict_checkpoint import weights_fingerprint
from kbvqa.models.tiny import load_tiny_vlm

SHIPPED = DATA_DIR / "tiny_vlm"


def test_the_card_records_the_fingerprint_every_table_names():
    card = json.loads((SHIPPED / "card.json").read_text())
    assert card["fingerprint"] == weights_fingerprint(SHIPPED)
    assert model_fingerprint() == f"tiny_vlm:{card['fingerprint']}"


@pytest.fixture
def copy(tmp_path):
    target = tmp_path / "tiny_vlm"
    shutil.copytree(SHIPPED, target)
    return target


def test_a_checkpoint_missing_a_tensor_names_itself_and_the_fix(copy):
    tensors = load_file(str(copy / "model.safetensors"))
    tensors.pop(sorted(n for n in tensors if "layers.0" in n)[0])
    save_file(tensors, str(copy / "model.safetensors"), metadata={"format": "pt"})
    card = json.loads((copy / "card.json").read_text())
    card.pop("fingerprint")                                 # the keys alone must catch it
    (copy / "card.json").write_text(json.dumps(card))
    with pytest.raises(ValueError, match=r"missing_keys.*git checkout"):
        load_tiny_vlm(copy)


def test_other_weights_than_the_card_measured_are_refused(copy):
    tensors = load_file(str(copy / "model.safetensors"))
    name = sorted(tensors)[0]
    tensors[name] = tensors[name] + 1e-3
    save_file(tensors, str(copy / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match=r"hashes to .* was measured on .*git checkout"):
        load_tiny_vlm(copy)
    assert load_tiny_vlm(SHIPPED).core is not None
