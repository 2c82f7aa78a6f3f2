"""python ~/notes/run_chapters.py NAME...: execute chapters (tools.nb_execute), write /tmp/executed/<name>.ipynb, print time + error."""
import sys, json
sys.path.insert(0, "/work/main")
from pathlib import Path
from tools.nb_execute import execute_notebook, write_notebook
for name in sys.argv[1:]:
    p = next(Path("/work/main/notebooks").glob(f"{name}*.ipynb"))
    ex = execute_notebook(p, timeout=900)
    write_notebook(ex, Path("/tmp/executed"))
    print(p.stem, f"{ex.seconds:.0f} s", ex.error or "ok", flush=True)
