"""``python -m kbvqa.experiments.serts_roles``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.serts_roles.run import main

if __name__ == "__main__":
    main()
