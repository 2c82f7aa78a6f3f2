"""``python -m kbvqa.experiments.reag_ladder``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.reag_ladder.run import main

if __name__ == "__main__":
    main()
