"""Localising the question's subject for fine-grained retrieval (ReAG §3.1, supp. A).

- ``VLMGrounder`` (cpu profile): the critic role's model (the reader) answers MOLT's grounding
  prompt (Table 11, ``molt_grounding``) with ``[x1, y1, x2, y2]`` in pixels of the image as it saw
  it (112 px for the reader, 56 for the tiny model), parsed by ``model_card.parse_box`` and scaled
  back to the picture's pixels. It is asked with the whole question, as MOLT does and as the
  models were trained (the subject is in the question); ``GroundingConfig(text="subject")`` asks
  with "this <subject>" instead.
- ``GroundingDinoGrounder`` (gpu profile): ReAG's detector, GroundingDINO, through transformers'
  ``AutoModelForZeroShotObjectDetection``, prompted with the subject phrase (``subject.py``); the
  highest-scoring box wins. Loaded lazily, never downloaded in tests. ``KBVQA_GROUNDER`` (a hub id
  or a local folder, ``gpu_grounder()``) replaces the checkpoint ``GPU_GROUNDER``, e.g. by the gpu
  smoke test's tiny random GroundingDINO on a machine without the hub.
- ``get_grounder(profile, vlm)``: the profile's grounder.

Every grounder has ``ground(images, questions, subjects=None) -> list[box | None]`` with boxes in
the picture's own pixels. ``None`` means nothing was found: that query then has no fine-grained
stage (§3.1: "if such a region is detected, we crop the image accordingly").

Leaves out: subject extraction and box arithmetic (``subject.py``), retrieval (``multilevel.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

from kbvqa.config import PROFILE_DEFAULT, get_profile, resolve_profile_fields
from kbvqa.data.schema import open_image
from kbvqa.models.loading import checkpoint_from_env, local_only, quiet_progress, resolve_device
from kbvqa.parsers import parse_box
from kbvqa.prompts import render_chat
from kbvqa.retrieval.subject import extract_subject, scale_box

__all__ = ["GPU_GROUNDER", "GroundingConfig", "GroundingDinoGrounder", "VLMGrounder", "get_grounder", "gpu_grounder"]

GPU_GROUNDER = "IDEA-Research/grounding-dino-tiny"
GROUNDER_VARIABLE = "KBVQA_GROUNDER"   # overrides GPU_GROUNDER: a hub id or a local folder


def gpu_grounder() -> str:
    """The gpu profile's GroundingDINO checkpoint: ``$KBVQA_GROUNDER`` (hub id or local folder) or
    ``GPU_GROUNDER``."""

    return checkpoint_from_env(GROUNDER_VARIABLE, GPU_GROUNDER)


@dataclass(frozen=True)
class GroundingConfig:
    image_size: int | None | str = PROFILE_DEFAULT  # cpu: 56 px (tiny) or 112 (reader), by role; gpu: native
    short_prompts: bool | str = PROFILE_DEFAULT  # cpu: the short renderings; gpu: the paper's
    text: str = "question"           # what fills the prompt's {question}: "question" or "subject"
    max_new_tokens: int = 24         # a box is about 12 tokens
    batch_size: int = 16

    def __post_init__(self):
        resolve_profile_fields(self, role="critic")   # the cpu grounder is the critic role's model
        if self.text not in ("question", "subject"):
            raise ValueError(f"text must be 'question' or 'subject', got {self.text!r}")
        if self.image_size is not None and self.image_size < 1 or self.max_new_tokens < 1 or self.batch_size < 1:
            raise ValueError(f"image_size, max_new_tokens and batch_size must be positive: {self}")


class VLMGrounder:
    """Boxes from a VLM's answer to MOLT's grounding prompt (see the module docstring)."""

    def __init__(self, vlm, config: GroundingConfig | None = None):
        self.vlm, self.config = vlm, config or GroundingConfig()

    def prompts(self, images, questions, subjects=None) -> tuple[list, list[tuple[int, int]]]:
        """(chat prompts, the (width, height) each image is shown at)."""
        from PIL import Image

        cfg, chats, shown = self.config, [], []
        for k, (image, question) in enumerate(zip(images, questions)):
            im = open_image(image)
            if cfg.image_size is not None and im.size != (cfg.image_size, cfg.image_size):
                im = im.resize((cfg.image_size, cfg.image_size), Image.Resampling.BILINEAR)
            text = question if cfg.text == "question" or not subjects else f"this {subjects[k]}"
            chats.append(render_chat("molt_grounding", images=[im], short=cfg.short_prompts, question=text,
                                     img_width=im.width, img_height=im.height))
            shown.append(im.size)
        return chats, shown

    def ground(self, images, questions, subjects=None) -> list[tuple[float, float, float, float] | None]:
        """One box per image in its own pixels (float), or ``None`` where no box parses."""

        images = list(images)
        if len(images) != len(questions):
            raise ValueError(f"{len(images)} images but {len(questions)} questions")
        if not images:
            return []
        chats, shown = self.prompts(images, questions, subjects)
        outs = self.vlm.generate(chats, n=1, max_new_tokens=self.config.max_new_tokens, temperature=0,
                                 batch_size=self.config.batch_size)
        boxes = []
        for image, size, out in zip(images, shown, outs):
            box = parse_box(out[0])
            boxes.append(None if box is None else scale_box(box, size, open_image(image).size))
        return boxes


class GroundingDinoGrounder:
    """ReAG's detector (gpu profile): the best box for the subject phrase, or ``None``.
    ``checkpoint=None``: ``gpu_grounder()``."""

    def __init__(self, checkpoint: str | None = None, device: str | None = None,
                 box_threshold: float = 0.35, text_threshold: float = 0.25):
        if not (0 <= box_threshold <= 1 and 0 <= text_threshold <= 1):
            raise ValueError("box_threshold and text_threshold must be in [0, 1]")
        self.checkpoint, self.device = checkpoint or gpu_grounder(), device
        self.box_threshold, self.text_threshold = box_threshold, text_threshold
        self._model = self._processor = None

    def _load(self):
        if self._model is None:
            from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor

            self.device = str(resolve_device(self.device))
            hub = local_only(self.checkpoint)
            self._processor = AutoProcessor.from_pretrained(self.checkpoint, **hub)
            with quiet_progress():
                model = AutoModelForZeroShotObjectDetection.from_pretrained(self.checkpoint, **hub)
            self._model = model.to(self.device).eval()

    def ground(self, images, questions, subjects=None) -> list[tuple[float, float, float, float] | None]:
        import torch

        subjects = list(subjects) if subjects is not None else [extract_subject(q) for q in questions]
        boxes: list = []
        for image, subject in zip(images, subjects):
            if not subject:
                boxes.append(None)
                continue
            self._load()
            im = open_image(image)
            inputs = self._processor(images=im, text=f"{subject.lower()}.", return_tensors="pt").to(self.device)
            with torch.no_grad():
                outputs = self._model(**inputs)
            found = self._processor.post_process_grounded_object_detection(
                outputs, inputs["input_ids"], threshold=self.box_threshold, text_threshold=self.text_threshold,
                target_sizes=[(im.height, im.width)])[0]
            if len(found["scores"]) == 0:
                boxes.append(None)
                continue
            best = int(found["scores"].argmax())
            boxes.append(tuple(float(v) for v in found["boxes"][best].tolist()))
        return boxes


def get_grounder(profile=None, vlm=None):
    """The profile's grounder: ``VLMGrounder(vlm)`` in the cpu profile (default: the ``critic`` role's
    model, ReAG's retrieval side, which is where grounding serves), ``GroundingDinoGrounder()`` in
    the gpu profile."""

    prof = profile if hasattr(profile, "is_gpu") else get_profile(profile)
    if prof.is_gpu:
        return GroundingDinoGrounder(device=prof.device)
    if vlm is None:
        from kbvqa.models.checkpoints import load_vlm

        vlm = load_vlm("critic", profile=prof)
    return VLMGrounder(vlm)
