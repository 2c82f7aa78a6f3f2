"""``python -m kbvqa.experiments.serts_experiment``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.serts_experiment.run import main

if __name__ == "__main__":
    main()
