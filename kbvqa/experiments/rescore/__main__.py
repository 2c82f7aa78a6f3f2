"""``python -m kbvqa.experiments.rescore``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.rescore.run import main

if __name__ == "__main__":
    main()
