import sys
sys.path.insert(0, "/tmp/tools")
from nbedit import NB
nb = NB("/work/reag-draft/notebooks/20_reag_retrieval.ipynb")
def rep_any(old, new):
    hits = [c for c in nb.nb["cells"] if old in "".join(c["source"])]
    assert len(hits) == 1, (old, len(hits))
    nb.rep(hits[0]["id"], old, new)
rep_any("subject extractor and the tiny VLM as the detector", "subject extractor and the reader as the detector")
rep_any("# tiny VLM's box (cpu) | GroundingDINO (gpu)", "# the reader's box (cpu) | GroundingDINO (gpu)")
src = [c for c in nb.nb["cells"] if "MOLT's grounding prompt (`molt_grounding`" in "".join(c["source"])][0]
s = "".join(src["source"])
i = s.index("cpu profile the tiny VLM"); j = s.index("No box means")
s = s[:i] + """cpu profile the reader (the critic role's model) answers MOLT's grounding prompt
(`molt_grounding`, one of the formats its adapters were trained on) with `[x1, y1, x2, y2]` in the
pixels of the 112-px picture it sees. """ + s[j:]
src["source"] = s.splitlines(True)
rep_any("n = profile.size(160, 544)", "n = profile.size(80, 544)")
rep_any("GroundingDINO a far better detector than a 1.45M-parameter VLM", "GroundingDINO a far better detector than our 135M-parameter reader")
rep_any("or the tiny VLM's grounding answer", "or the reader's grounding answer")
rep_any("recall at k = 1 on the first 160 queries", "recall at k = 1 on the first 80 queries")
rep_any("evaluate_multilevel(world, r, grounder, n=160, ks=(1,))", "evaluate_multilevel(world, r, grounder, n=80, ks=(1,))")
nb.save()
