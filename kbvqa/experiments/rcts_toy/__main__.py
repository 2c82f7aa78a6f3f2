"""``python -m kbvqa.experiments.rcts_toy``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.rcts_toy.run import main

if __name__ == "__main__":
    main()
