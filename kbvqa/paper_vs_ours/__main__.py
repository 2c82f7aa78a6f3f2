"""``python -m kbvqa.paper_vs_ours``: write ``data/experiments/effects.json`` from the committed tables.

Guarded, so that importing every module (Sphinx, a test walking the package) writes nothing."""
from kbvqa.paper_vs_ours.effects_file import EFFECTS_FILE, write_effects


def main() -> None:
    written = write_effects()
    print(f"{EFFECTS_FILE}: {len(written['rows'])} effects, "
          f"{written['same']} of {written['counted']} counted rows 'same'")


if __name__ == "__main__":
    main()
