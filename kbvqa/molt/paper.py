"""The MOLT paper's numbers that the book prints next to ours, each once: Tab. 2/3 (recall of the
candidate pipeline and the tournament), Tab. 4 (step-wise ablation), Tab. 5 (training ablation) and
Tab. 6 (schedules).
"""
from __future__ import annotations

PAPER_KEY = "molt2026"


PAPER_TAB5 = [("Base (Standard)", "One-shot 5-way", 79.4), ("Base (Ours)", "Tournament", 81.0),
              ("SFT Cold Start", "Tournament", 85.4), ("SFT + GRPO (w/o R_proc)", "Tournament", 86.7),
              ("SFT + GRPO (Full)", "Tournament", 88.3), ("SFT + SAPO (Full)", "Tournament", 88.2)]


PAPER_TAB6 = {"random": 85.5, "strong_to_weak": 86.3, "weak_to_strong": 88.3}


# method -> (R@1, R@5, R@10, R@20) in %, MOLT Tab. 2 (E-VQA) and Tab. 3 (InfoSeek)
PAPER_RECALL = {
    "E-VQA (Tab. 2)": {"OMGM": (42.8, 55.7, 58.1, 58.7), "Ours (Doc sel.)": (42.4, 56.7, 58.3, 58.6),
                       "Ours (+MOLT)": (50.1, 56.7, 58.3, 58.6)},
    "InfoSeek (Tab. 3)": {"OMGM": (64.0, 80.8, 83.6, 84.8), "Ours (Doc sel.)": (60.1, 81.0, 83.8, 84.8),
                          "Ours (+MOLT)": (65.6, 81.0, 83.8, 84.8)},
}


# (passage extraction, grounding, MOLT reranker) -> (E-VQA, InfoSeek) VQA accuracy in %, MOLT Tab. 4
# (step-wise ablation, Qwen3-VL-8B generator)
PAPER_TAB4 = {(False, False, False): (22.1, 18.2), (True, False, False): (50.6, 40.2),
              (True, False, True): (57.2, 44.3), (True, True, True): (57.5, 45.3)}
