"""``python -m kbvqa.paper_vs_ours``: write ``data/experiments/effects.json`` from the committed tables.

Parses its arguments first (``--help`` writes nothing). Each counted table's plan is held to the commit
its run recorded (``kbvqa.experiments.plans.plan_status`` with ``verify_git``); a mismatch raises
``ValueError`` naming the plan file and the field. Guarded, so that importing every module (Sphinx, a
test walking the package) writes nothing."""
import argparse
from pathlib import Path

from kbvqa.paper_vs_ours.effects_file import EFFECTS_FILE, write_effects


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kbvqa.paper_vs_ours", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=EFFECTS_FILE, help=f"where to write (default {EFFECTS_FILE})")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the file is stale")
    args = parser.parse_args(argv)
    if args.check:
        from kbvqa.paper_vs_ours.effects_file import load_effects, stale_effect_rows

        stale = stale_effect_rows(load_effects(args.out))
        print(f"{args.out}: " + ("up to date" if not stale else f"stale rows {stale}"))
        raise SystemExit(1 if stale else 0)
    written = write_effects(args.out)
    print(f"{args.out}: {len(written['rows'])} effects; strict: {written['same']} of {written['counted']} counted rows "
          f"'same' ({written['paper_mechanism']} by the paper's mechanism); lenient rule: {written['same_lenient']}")


if __name__ == "__main__":
    main()
