"""``python -m kbvqa.experiments.rcts_contexts``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.rcts_contexts.run import main

if __name__ == "__main__":
    main()
