"""``python -m kbvqa.experiments.rcts_letter_binding``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.rcts_letter_binding.run import main

if __name__ == "__main__":
    main()
