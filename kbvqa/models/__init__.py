"""One VLM interface for every chapter (``VLM``), over transformers' image-text-to-text models.

- ``VLM`` (``vlm.py``): ``from_pretrained`` / ``from_model``, ``generate``, ``p_yes``,
  ``completion_logprobs``, ``add_lora``, ``save_pretrained``; named LoRA adapters on one base, one
  per trained role (``adapters.py``): ``vlm.adapter(name)``, ``vlm.without_adapters()``.
- prompts (``chat.py``): chats of text and image parts; ``make_chat(text, image)``, ``chat_images(chat)``.
- tiny models (``families.py``): ``tiny_config``, ``build_tokenizer``, ``build_tiny_vlm`` for the
  Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Idefics3 (SmolVLM) families.
- retrieval encoders (``encoders.py``): token-level text (MiniLM) and image (small CNN) embeddings in
  one space for late interaction, pooled vectors for FAISS; CLIP in the gpu profile.
- torchvision-free processors (``processors.py``), loading options and ``free_memory`` (``loading.py``), hub
  checkpoints per role, ``load_vlm(role)``, which picks the reader (the roles in ``CPU_READER_ROLES``),
  the tiny or the hub model by profile, and ``role_model(role)``, which names those weights without
  loading them, as a run's provenance does (``checkpoints.py``).
- the toy literature the tiny model was pretrained on (``pretrain_mc_lit.py``): ``lit_question_split``
  (the questions held out for the chapters) and ``rubric_score`` (the SeRTS evaluator's rubric).

Importing this package registers the image-only Qwen processors with ``AutoProcessor``.
"""
from kbvqa.config import CPU_READER_ROLES
from kbvqa.models.chat import chat_images, make_chat
from kbvqa.models.checkpoints import GPU_CHECKPOINTS, gpu_checkpoint, load_vlm, role_model
from kbvqa.models.encoders import (
                                   GPU_ENCODER,
                                   ClipEncoders,
                                   EncoderConfig,
                                   ToyEncoders,
                                   document_text,
                                   encoder_card,
                                   get_encoders,
                                   load_encoders,
                                   sentence_vectors,
)
from kbvqa.models.families import FAMILIES, TinySpec, build_tiny_vlm, build_tokenizer, tiny_config
from kbvqa.models.from_scratch import assoc_recall_table
from kbvqa.models.gpu_budget import budget_table
from kbvqa.models.loading import free_memory
from kbvqa.models.outputs import Generations
from kbvqa.models.pretrain_mc_lit import lit_question_split, rubric_score
from kbvqa.models.scoring import CompletionLogprobs
from kbvqa.models.vlm import VLM

__all__ = ["assoc_recall_table", "budget_table", "CPU_READER_ROLES",
           "build_tiny_vlm", "build_tokenizer", "chat_images", "ClipEncoders", "CompletionLogprobs", "document_text",
           "encoder_card", "EncoderConfig", "FAMILIES", "free_memory", "Generations", "get_encoders", "gpu_checkpoint",
           "GPU_CHECKPOINTS", "GPU_ENCODER", "lit_question_split", "load_encoders", "load_vlm", "make_chat",
           "role_model", "rubric_score", "sentence_vectors", "tiny_config", "TinySpec", "ToyEncoders", "VLM"]
