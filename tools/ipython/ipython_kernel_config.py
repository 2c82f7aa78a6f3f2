# The chapters' kernels during `make book` (the Makefile copies this file to
# _build/ipython/profile_default/ and sets IPYTHONDIR=_build/ipython): every figure the book
# prints is checked for legibility and logged to $KBVQA_FIGURE_LOG (kbvqa/viz/figure_log.py).
c = get_config()  # noqa: F821 - IPython's config loader provides it
c.InteractiveShellApp.extensions = ["kbvqa.viz.figure_log"]
