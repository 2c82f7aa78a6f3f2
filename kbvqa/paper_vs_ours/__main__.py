"""``python -m kbvqa.paper_vs_ours``: write ``data/experiments/effects.json`` from the committed tables."""
from kbvqa.paper_vs_ours.effects_file import EFFECTS_FILE, write_effects

written = write_effects()
print(f"{EFFECTS_FILE}: {len(written['rows'])} effects, {written['same']} of {written['counted']} counted rows 'same'")
