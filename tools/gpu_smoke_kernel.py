"""Start-up file of every notebook kernel in the gpu smoke run (``PYTHONSTARTUP``; IPython runs it
in the kernel before the first cell).

After every cell, failed ones included, it rewrites ``$KBVQA_SMOKE_RECORD`` (JSON): the process's
peak CUDA memory so far (``torch.cuda.max_memory_allocated``, GiB; 0 until a cell has used CUDA;
each chapter runs in a fresh kernel, so the peak is the chapter's), the CUDA device's name, the
number of cells run and the file ``kbvqa`` was imported from (the run checks it is the wheel's).

``KBVQA_SMOKE_CPU=1`` (``python -m tools.gpu_smoke --cpu``, debugging on a machine without CUDA):
``kbvqa.config.get_profile`` then returns the gpu profile with its device set to ``"cpu"`` instead
of refusing. Standalone: it imports neither ``tools`` nor anything of ``kbvqa`` but ``kbvqa.config``,
and leaves no name in the notebook's namespace. Leaves out: running the notebooks (``gpu_smoke.py``).
"""


def _kbvqa_gpu_smoke_setup():
    import json
    import os
    import sys

    record, cells = os.environ.get("KBVQA_SMOKE_RECORD", ""), [0]

    def after_cell(*_):
        cells[0] += 1
        torch, peak, device = sys.modules.get("torch"), 0.0, None
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            peak, device = torch.cuda.max_memory_allocated() / 2**30, torch.cuda.get_device_name()
        kbvqa = sys.modules.get("kbvqa")
        with open(record, "w", encoding="utf-8") as f:
            json.dump({"peak_memory_gib": peak, "device": device, "cells": cells[0],
                       "kbvqa": getattr(kbvqa, "__file__", None)}, f)

    if os.environ.get("KBVQA_SMOKE_CPU") == "1":
        import dataclasses

        import kbvqa.config as config

        real = config.get_profile

        def get_profile(name=None):
            saved, config.cuda_available = config.cuda_available, lambda: True
            try:
                profile = real(name)
            finally:
                config.cuda_available = saved
            return dataclasses.replace(profile, device="cpu") if profile.is_gpu else profile

        config.get_profile = get_profile
    if record:
        get_ipython().events.register("post_run_cell", after_cell)  # noqa: F821 - IPython's global


_kbvqa_gpu_smoke_setup()
del _kbvqa_gpu_smoke_setup
