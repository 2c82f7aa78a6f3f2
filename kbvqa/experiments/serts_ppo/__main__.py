"""``python -m kbvqa.experiments.serts_ppo``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.serts_ppo.run import main

if __name__ == "__main__":
    main()
