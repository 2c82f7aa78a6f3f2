"""The ReAG paper's numbers that the book prints next to ours, each once.

``PAPER``: Tab. 4's retrieval rows, Tab. 6 (the critic's recall and specificity), the "128.6 -> 5.7"
passages of Fig. 7, k = 20 and the 0.1 threshold of supp. A / C.3 (the ablation ladder's Tab. 4
rows live with its results, ``kbvqa.reag.results``).
"""
from __future__ import annotations

PAPER_KEY = "compagnoni2026reag"


PAPER_SOURCE = "ReAG Tab. 4 (k = 20; accuracy %)"


_FLAGS = ("coarse", "fine", "critic", "sft", "reasoning", "traces", "rl")
# (generator, flags as printed, E-VQA single-hop, InfoSeek unseen-Q, unseen-E, all)
PAPER_TAB4 = [
    ("Qwen2.5-VL-3B", "-------", 21.9, 18.9, 17.7, 18.3),
    ("Qwen2.5-VL-3B", "x------", 19.2, 10.2, 10.0, 10.1),
    ("Qwen2.5-VL-3B", "x-x----", 38.0, 27.9, 26.1, 27.0),
    ("Qwen2.5-VL-3B", "xxx----", 40.2, 28.1, 26.1, 27.1),
    ("Qwen2.5-VL-3B", "xxxx---", 39.3, 37.9, 37.1, 37.5),
    ("Qwen2.5-VL-3B", "xxxxx--", 38.1, 41.9, 40.6, 41.3),
    ("Qwen2.5-VL-3B", "xxxx--x", 39.5, 39.8, 39.4, 39.6),
    ("Qwen2.5-VL-3B", "xxxxxxx", 41.3, 43.7, 42.9, 43.3),
    ("Qwen2.5-VL-7B", "xxx----", 41.7, 29.3, 27.8, 28.5),
    ("Qwen2.5-VL-7B", "xxxxx--", 42.0, 42.0, 40.7, 41.4),
    ("Qwen2.5-VL-7B", "xxxxxxx", 44.9, 48.3, 46.2, 47.2),
]


PAPER = {
    # Tab. 4, Qwen2.5-VL-3B zero-shot generator, k = 20: answer accuracy (E-VQA single-hop, InfoSeek all)
    "tab4_retrieval_rows": {label: (row[2], row[5]) for label, row in
                            zip(("no retrieval", "coarse", "coarse + critic", "coarse + fine + critic"), PAPER_TAB4)},
    "tab6": {"ReflectiVA (Qwen2.5-VL-3B)": (91.3, 93.8), "ReAG (Qwen2.5-VL-3B)": (94.6, 95.7)},  # recall, specificity
    "passages_k20": (128.6, 5.7),   # Fig. 7: passages per query without / with the critic
    "k": 20,                        # documents per stage (supp. A)
    "threshold": 0.1,               # P(Yes) threshold (supp. A, C.3)
}


PAPER_ROW_OF = {"no_retrieval": 0, "coarse": 1, "coarse_critic": 2, "fine_critic": 3, "sft": 4, "traces": 5, "rl": 7}


def paper_rows() -> list[dict]:
    """``PAPER_TAB4`` as dicts (flags spelled out)."""
    return [{"generator": g, **{f: c == "x" for f, c in zip(_FLAGS, flags)}, "evqa_single_hop": e,
             "infoseek_unseen_q": uq, "infoseek_unseen_e": ue, "infoseek_all": a}
            for g, flags, e, uq, ue, a in PAPER_TAB4]

