"""``python -m kbvqa.experiments.pipeline_ablation``: the command line of ``run.py`` (``run.main``)."""
from kbvqa.experiments.pipeline_ablation.run import main

if __name__ == "__main__":
    main()
