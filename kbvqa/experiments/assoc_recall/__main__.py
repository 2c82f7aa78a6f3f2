"""``python -m kbvqa.experiments.assoc_recall``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.assoc_recall.run import main

if __name__ == "__main__":
    main()
