"""The RCTS paper's numbers (Yang et al., 2025), transcribed so every table we print sits next to them.

All values are accuracies in percent, exactly as printed in ``papers/rcts.txt``:

- ``PAPER_TAB2``  Tab. 2, main comparison: {dataset: {model: {method: accuracy}}} for ScienceQA
  (test), MMMU-Dev and MathV (testmini) with Qwen2-VL 2B / 7B and InternVL-2 8B.
- ``PAPER_TAB3``  Tab. 3, non-reasoning sets (VizWiz val, VSR-MC test), Qwen2-VL 7B, no reasoning
  context.
- ``PAPER_TAB4``  Tab. 4, component ablation with Qwen2-VL 7B: rows (MCTS, reasoning context) in
  {no, yes}^2. Row (no, no) is Vanilla-RAG and row (yes, yes) the full RCTS.
- ``PAPER_TAB5``  Tab. 5, reward weight alpha of Eq. 9 (Qwen2-VL 7B; 0.2 is the default).
- ``PAPER_TAB6``  Tab. 6, accuracy of the reasoning contexts of the knowledge bases.
- ``PAPER_FIG5B`` Fig. 5b, accuracy against the number of rollouts: the paper gives it only as a
  plot (its text says the trend is "consistent" and P = 10 was chosen), so no values are
  transcribed; chapters print our curve alone and say so.

``paper_rows(kind)`` returns the rows our toy experiment compares with (method names as in
``kbvqa.rcts.runs.METHODS``). Leaves out: our own numbers (``data/experiments/rcts/``).
"""
from __future__ import annotations

PAPER_KEY = "yang2025rcts"

_METHODS = ("zero_shot", "icl_random", "vanilla_rag", "rcts")

PAPER_TAB2: dict[str, dict[str, dict[str, float]]] = {
    "ScienceQA": {
        "Qwen2-VL-2B": dict(zip(_METHODS, (67.18, 70.10, 71.94, 78.99))),
        "Qwen2-VL-7B": dict(zip(_METHODS, (80.33, 81.63, 86.68, 91.44))),
        "InternVL-2-8B": dict(zip(_METHODS, (93.00, 93.14, 92.78, 94.20))),
    },
    "MMMU": {
        "Qwen2-VL-2B": dict(zip(_METHODS, (44.00, 41.33, 42.67, 44.00))),
        "Qwen2-VL-7B": dict(zip(_METHODS, (51.33, 47.33, 50.00, 53.33))),
        "InternVL-2-8B": dict(zip(_METHODS, (48.00, 47.33, 46.67, 51.33))),
    },
    "MathV": {
        "Qwen2-VL-2B": dict(zip(_METHODS, (18.75, 17.76, 20.39, 22.04))),
        "Qwen2-VL-7B": dict(zip(_METHODS, (22.04, 23.35, 24.67, 28.95))),
        "InternVL-2-8B": dict(zip(_METHODS, (21.71, 21.05, 18.42, 24.01))),
    },
}

PAPER_TAB3: dict[str, dict[str, float]] = {
    "VizWiz": dict(zip(_METHODS, (66.49, 69.01, 69.89, 71.50))),
    "VSR-MC": dict(zip(_METHODS, (51.22, 52.32, 52.92, 55.97))),
}

# (use MCTS, use reasoning context) -> dataset -> accuracy; Qwen2-VL 7B.
PAPER_TAB4: dict[tuple[bool, bool], dict[str, float]] = {
    (False, False): {"ScienceQA": 86.68, "MMMU": 50.00, "MathV": 24.67},
    (False, True): {"ScienceQA": 88.33, "MMMU": 50.60, "MathV": 26.97},
    (True, False): {"ScienceQA": 88.92, "MMMU": 49.33, "MathV": 25.65},
    (True, True): {"ScienceQA": 91.44, "MMMU": 53.33, "MathV": 28.95},
}

# alpha -> dataset -> accuracy; Qwen2-VL 7B.
PAPER_TAB5: dict[float, dict[str, float]] = {
    0.0: {"ScienceQA": 90.99, "MMMU": 50.67, "MathV": 26.64},
    0.2: {"ScienceQA": 91.44, "MMMU": 53.33, "MathV": 28.95},
    0.5: {"ScienceQA": 90.71, "MMMU": 54.00, "MathV": 27.67},
    0.8: {"ScienceQA": 90.17, "MMMU": 54.00, "MathV": 25.32},
    1.0: {"ScienceQA": 86.72, "MMMU": 48.67, "MathV": 25.98},
}

PAPER_TAB6: dict[str, dict[str, float]] = {
    "Qwen2-VL-2B": {"ScienceQA": 90.56, "MMMU": 98.60, "MathV": 85.78},
    "Qwen2-VL-7B": {"ScienceQA": 100.0, "MMMU": 99.89, "MathV": 96.67},
    "InternVL-2-8B": {"ScienceQA": 97.37, "MMMU": 96.00, "MathV": 92.84},
}

PAPER_FIG5B = None   # plotted only; no values in the text (see the module docstring)

PAPER_SETTINGS = {   # §4.2
    "K": 3, "N": 20, "width": 3, "rollouts": 10, "alpha": 0.2, "N_s": 5, "N_m": 5, "N_c": 10, "N_p": 10,
}

KINDS = ("main", "ablation", "alpha")


def paper_rows(kind: str, dataset: str = "ScienceQA", model: str = "Qwen2-VL-2B") -> dict[str, float]:
    """The paper's accuracy (percent) per row name of our toy tables.

    ``"main"``: Tab. 2 for ``dataset``/``model`` (rows ``zero_shot`` ... ``rcts``); ``"ablation"``:
    Tab. 4 (rows ``mcts=0,rc=0`` ...; the paper ran it with Qwen2-VL 7B only); ``"alpha"``: Tab. 5
    (rows ``alpha=0.2`` ...; Qwen2-VL 7B). An unknown kind, dataset or model raises ``ValueError``.
    """
    if kind == "main":
        if dataset not in PAPER_TAB2 or model not in PAPER_TAB2[dataset]:
            raise ValueError(f"Tab. 2 has no {dataset!r}/{model!r}; datasets {sorted(PAPER_TAB2)}, "
                             f"models {sorted(PAPER_TAB2['ScienceQA'])}")
        return dict(PAPER_TAB2[dataset][model])
    if kind == "ablation":
        _check_dataset(dataset, PAPER_TAB4[(True, True)])
        return {ablation_row(m, r): v[dataset] for (m, r), v in PAPER_TAB4.items()}
    if kind == "alpha":
        _check_dataset(dataset, PAPER_TAB5[0.2])
        return {alpha_row(a): v[dataset] for a, v in PAPER_TAB5.items()}
    raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")


def _check_dataset(dataset: str, row: dict) -> None:
    if dataset not in row:
        raise ValueError(f"no dataset {dataset!r}; expected one of {sorted(row)}")


def ablation_row(use_mcts: bool, use_context: bool) -> str:
    """Row name of Tab. 4's cell (MCTS on/off, reasoning context on/off)."""
    return f"mcts={int(use_mcts)},rc={int(use_context)}"


def alpha_row(alpha: float) -> str:
    return f"alpha={alpha:g}"


def rollouts_row(rollouts: int) -> str:
    return f"rollouts={rollouts}"


PAPER_TABLE6 = {
    "Qwen2-VL (2B)": {"ScienceQA": 90.56, "MMMU": 98.60, "MathV": 85.78},
    "Qwen2-VL (7B)": {"ScienceQA": 100.0, "MMMU": 99.89, "MathV": 96.67},
    "InternVL-2 (8B)": {"ScienceQA": 97.37, "MMMU": 96.00, "MathV": 92.84},
}
