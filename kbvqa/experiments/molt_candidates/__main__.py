"""``python -m kbvqa.experiments.molt_candidates``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.molt_candidates.run import main

if __name__ == "__main__":
    main()
