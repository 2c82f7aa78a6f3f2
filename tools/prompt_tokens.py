"""Token counts of the training prompts as the gpu profile renders them (issue 56: the T4 budget's inputs).

Renders a few examples of each trained prompt with the gpu profile's settings (the papers' prompts,
``short_prompts=False``; pictures at their own size, ``image_size=None``) and counts their text tokens
with the reader's tokenizer (SmolLM2's, the cpu profile's; the Qwen tokenizers split English text into
about as many tokens), the picture markers left out, and the pictures per prompt; the completions'
tokens too. ``kbvqa.models.gpu_budget.CHAPTER_TRAINING`` and ``kbvqa.models.t4_time.CHAPTER_WORK``
quote the figures (a picture adds the hub processor's tokens: 16 for a 112-px picture on the Qwen
families, 64 on SmolVLM with one tile).

Run: ``python -m tools.prompt_tokens`` (about a minute on one core; loads the reader's tokenizer).
"""
from __future__ import annotations

import statistics


def counts(vlm, chats) -> list[tuple[int, int]]:
    """(text tokens, pictures) of each chat, the picture markers not counted."""
    image_id = vlm.tokenizer.convert_tokens_to_ids("<image>")
    out = []
    for chat, text in zip(chats, vlm.render(chats)):
        pictures = sum(1 for turn in chat if isinstance(turn["content"], list)
                       for part in turn["content"] if part.get("type") == "image")
        ids = vlm.tokenizer(text, add_special_tokens=False).input_ids
        out.append((sum(1 for i in ids if i != image_id), pictures))
    return out


def main() -> None:
    import torch

    from kbvqa.config import get_profile
    from kbvqa.data import get_world
    from kbvqa.models import load_vlm
    from kbvqa.models.pretrain_mix import PretrainMixConfig
    from kbvqa.molt import SFTDataConfig, build_sft_set
    from kbvqa.reag.cold_start import cold_start_examples
    from kbvqa.reag.critic_train import CriticTrainConfig, critic_training_examples

    torch.set_num_threads(1)
    vlm, world = load_vlm("reader", profile=get_profile("cpu")), get_world(0)
    sets = {
        "critic (chapter 21)": critic_training_examples(world, 16, CriticTrainConfig(short_prompts=False,
                                                                                    image_size=None)),
        "cold start (chapters 22, 23)": cold_start_examples(
            world, 16, seed=0, cfg=PretrainMixConfig(short_prompts=False, image_size=None)),
        "MOLT SFT (chapter 27)": build_sft_set(world, world.kbvqa_train[:8],
                                               config=SFTDataConfig(seed=0, short_prompts=False, image_size=None)),
    }
    for name, examples in sets.items():
        rows = counts(vlm, [e.prompt for e in examples])
        text = [t for t, _ in rows]
        completion = [len(vlm.tokenizer(e.completion).input_ids) for e in examples]
        print(f"{name}: text tokens median {statistics.median(text):.0f}, max {max(text)}; pictures "
              f"{max(p for _, p in rows)}; completion median {statistics.median(completion):.0f}, "
              f"max {max(completion)}")


if __name__ == "__main__":
    main()
