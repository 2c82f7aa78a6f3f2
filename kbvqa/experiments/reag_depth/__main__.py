"""``python -m kbvqa.experiments.reag_depth``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.reag_depth.run import main

if __name__ == "__main__":
    main()
