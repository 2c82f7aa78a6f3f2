"""The SeRTS paper's numbers that the book prints next to ours, each once: Tab. 3 (retrieval), Tab. 4
(answers), Tab. 6 and Tab. 9, with the model each row was measured with (``PAPER_MODEL_OF``).
"""
from __future__ import annotations

PAPER_KEY = "hu2024serts"

# Tab. 3 (retrieval, %): method -> (precision, recall, F1, hit rate); None: BM25 is model-free
# Tab. 4 (answers, %): (R-2 recall, R-2 F1, R-SU4 recall, R-SU4 F1); the paper gives no Sim: we map to Sim 12
# Tab. 6 (GPT-3.5, answers, %): same columns as Tab. 4
# Tab. 9 (Llama2-7B, total generated tokens over the Tab. 4 experiment)
PAPER_TAB3 = {
    "bm25": {"any": (72.48, 47.16, 45.87, 83.00)},
    "reflection_6": {"gpt-3.5": (66.26, 58.96, 51.18, 88.89), "llama2-7b": (72.48, 48.66, 47.12, 84.44)},
    "serts_6": {"gpt-3.5": (74.31, 59.09, 55.06, 92.22), "llama2-7b": (67.85, 50.95, 47.58, 83.33)},
    "reflection_12": {"gpt-3.5": (71.36, 58.84, 52.72, 91.11), "llama2-7b": (68.04, 51.82, 48.79, 83.33)},
    "serts_12": {"gpt-3.5": (74.65, 58.96, 54.70, 94.44), "llama2-7b": (70.62, 52.51, 49.39, 85.55)},
}


PAPER_TAB4 = {
    "ground_truth": {"any": (57.02, 56.64, 58.26, 57.42)},
    "bm25": {"any": (25.58, 22.74, 29.63, 26.22)},
    "reflection_12": {"gpt-3.5": (26.92, 24.08, 30.86, 27.41), "llama2-7b": (25.73, 22.86, 29.70, 26.41)},
    "serts_12": {"gpt-3.5": (27.25, 24.35, 31.25, 27.77), "llama2-7b": (26.18, 23.20, 30.30, 26.79)},
}


PAPER_TAB6 = {"bm25": (25.58, 22.74, 29.63, 26.22), "reflection_12": (26.92, 24.08, 30.86, 27.41),
              "serts_random_12": (25.74, 22.87, 29.73, 26.29), "serts_greedy_12": (25.73, 22.87, 29.70, 26.27),
              "serts_12": (27.25, 24.35, 31.25, 27.77)}


PAPER_TAB9 = {"reflection_6": 342_445, "serts_6": 347_359, "reflection_12": 973_113, "serts_12": 679_584}


PAPER_MODEL_OF = {"scripted": "gpt-3.5", "model": "llama2-7b"}
