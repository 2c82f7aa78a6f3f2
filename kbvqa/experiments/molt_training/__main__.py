"""``python -m kbvqa.experiments.molt_training``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.molt_training.run import main

if __name__ == "__main__":
    main()
