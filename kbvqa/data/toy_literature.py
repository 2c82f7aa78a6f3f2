"""The toy literature corpus and its BioASQ-style questions (SeRTS §4.1 uses BioASQ-QA).

Abstracts: each fact of ``toy_lit_concepts`` (a causal gene, a symptom profile, a trial that
worked or failed, a drug target, side effects, a description, a gene function) is reported by
2-4 short abstracts: a title, one sentence stating the fact and one to three generic study
sentences. Each abstract calls every concept by one of its names, drawn at random, so the same
fact appears under different wordings. With ``ToyWorldConfig.abstract_alias_share > 0`` that share
of abstracts also introduces a second name of its subject in brackets (issue 55; 0 by default, the
corpus of the committed runs).

Questions (``Query`` with no image): "yesno", "factoid", "list" and "summary", as in BioASQ.
``gold_doc_ids`` are all abstracts of the facts the answer needs; ``solution`` is the ideal answer
(one or two sentences, canonical names); ``answers`` are the exact answers ("yes"/"no", the
canonical names of the answer concepts, nothing for summaries); ``meta["exact_answer"]`` holds the
synonym list of each exact answer (list of lists; "yes"/"no" for yes/no; None for summaries) and
``meta["concepts"]`` the canonical names of the concepts the question mentions, whose synonyms
(``ToyWorld.synonyms``) are what a query reformulation should add.

Leaves out: the concept names and the fact base (``toy_lit_concepts.py``).
"""
from __future__ import annotations

from kbvqa.data.schema import LiteratureItem, Query
from kbvqa.data.toy_lit_concepts import Concept
from kbvqa.data.toy_names import item_rng, join_names

_KEY_SENTENCES = {
    "gene": ("Loss-of-function mutations in {g} cause {c}.",
             "Sequencing of {n} families with {c} identified pathogenic variants in {g}.",
             "{c} results from inherited defects of {g}."),
    "symptoms": ("Patients with {c} typically present with {s}.",
                 "In a cohort of {n} people with {c}, the most frequent complaints were {s}."),
    "treatment": (("In a randomised trial of {n} patients with {c}, {d} reduced disease activity "
                   "compared with placebo."),
                  "Treatment with {d} led to sustained remission in {p}% of patients with {c}.",
                  "{d} improved outcomes of {c} in an open-label study of {n} participants."),
    "failed": ("{d} did not improve outcomes in patients with {c} compared with placebo.",
               "A phase II trial of {d} in {c} was stopped early for lack of efficacy."),
    "description": (("{c} is a rare {category} disorder with onset in {onset}, affecting about 1 in "
                     "{prevalence},000 people."),
                    ("{c}, a {category} disease that usually begins in {onset}, has an estimated "
                     "prevalence of 1 in {prevalence},000.")),
    "target": ("{d} is a {cls} that selectively blocks {g}.",
               "{d} acts on {g}; it belongs to the class of {cls}s."),
    "side_effects": ("The most common adverse events of {d} were {s}.",
                     "Patients receiving {d} reported {s} more often than those on placebo."),
    "function": ("{g} encodes {function} that is highly expressed in the {tissue}.",
                 "The protein made from {g} is {function} found mainly in the {tissue}."),
}
_TITLES = {
    "gene": "Genetic basis of {c}", "symptoms": "Clinical features of {c}",
    "treatment": "{d} for {c}: a clinical trial", "failed": "{d} in {c}: a negative trial",
    "description": "{c}: an overview", "target": "Mechanism of action of {d}",
    "side_effects": "Safety profile of {d}", "function": "Expression and role of {g}",
}
_FILLERS = ("We enrolled {n} participants at {m} centres.",
            "Outcomes were assessed after {w} weeks of follow-up.",
            "Data were analysed with mixed-effects models.",
            "These results support further study in larger cohorts.",
            "Our findings extend earlier case reports.",
            "Samples were collected between {y} and {y2}.",
            "Limitations include the small sample and the short follow-up.")


def _facts(concepts: dict[str, Concept]) -> list[tuple[str, str, tuple]]:
    """(fact id, relation, concept ids) for every reportable fact, in a fixed order."""
    out = []
    for c in concepts.values():
        if c.kind == "condition":
            out.append((f"{c.id}/description", "description", (c.id,)))
            out.append((f"{c.id}/gene", "gene", (c.id, c.facts["gene"])))
            out.append((f"{c.id}/symptoms", "symptoms", (c.id, *c.facts["symptoms"])))
            out.extend((f"{c.id}/treatment/{d}", "treatment", (c.id, d)) for d in c.facts["treatments"])
            out.append((f"{c.id}/failed/{c.facts['failed']}", "failed", (c.id, c.facts["failed"])))
        elif c.kind == "compound":
            out.append((f"{c.id}/target", "target", (c.id, c.facts["target"])))
            out.append((f"{c.id}/side_effects", "side_effects", (c.id, *c.facts["side_effects"])))
        elif c.kind == "gene":
            out.append((f"{c.id}/function", "function", (c.id,)))
    return out


def build_abstracts(seed: int, concepts: dict[str, Concept], per_fact: tuple[int, int], alias_share: float = 0.0):
    """(abstracts, fact id -> abstract ids). ``alias_share``: the share of abstracts whose key sentence
    introduces a second name of its subject, "kibekitabine (KZ-2018)", as real abstracts do (issue
    55: a name the question does not use can then be discovered by reading). The choice comes from a
    stream of its own (``item_rng(seed, "aliases", fact)``), so every other draw, and with 0 the whole
    corpus, stays as it was; such an abstract's ``meta["alias"]`` holds the name it introduces."""
    if not 0.0 <= alias_share <= 1.0:
        raise ValueError(f"alias_share must lie in [0, 1], got {alias_share!r}")
    items: list[LiteratureItem] = []
    by_fact: dict[str, list[str]] = {}
    for fact_id, rel, ids in _facts(concepts):
        rng = item_rng(seed, "abstracts", fact_id)
        alias_rng = item_rng(seed, "aliases", fact_id)
        subject = concepts[ids[0]]
        n_abstracts = rng.randint(*per_fact)
        if rel in ("symptoms", "side_effects"):  # enough abstracts to mention every item
            n_abstracts = max(n_abstracts, (len(ids) - 1 + 1) // 2)
        for k in range(n_abstracts):
            name = {cid: rng.choice(concepts[cid].names) for cid in ids}
            fields = {"n": rng.randint(12, 480), "p": rng.randint(35, 80), "m": rng.randint(2, 14),
                      "w": rng.randint(8, 96), "y": rng.randint(2001, 2016), **subject.facts}
            fields["y2"] = fields["y"] + rng.randint(1, 6)
            fields["cls"] = subject.facts.get("class", "")
            first = subject.kind[0] if subject.kind != "compound" else "d"
            fields[first] = name[ids[0]]
            mentioned = list(ids)
            if rel in ("gene", "target"):
                fields["g"] = name[ids[1]]
            if rel in ("treatment", "failed"):
                fields["d"] = name[ids[1]]
            if rel in ("symptoms", "side_effects"):  # each reports 2-3 of them; together, all
                listed = list(ids[1:])
                start = (2 * k) % len(listed)
                listed = (listed[start:] + listed[:start])[:rng.choice((2, 3))]
                fields["s"] = join_names([name[s] for s in listed], article="")
                mentioned = [ids[0], *listed]
            key_fields, alias = fields, None
            if alias_share and alias_rng.random() < alias_share:
                others = [n for n in subject.names if n != name[ids[0]]]
                if others:
                    alias = alias_rng.choice(others)
                    key_fields = {**fields, first: f"{name[ids[0]]} ({alias})"}
            key = rng.choice(_KEY_SENTENCES[rel]).format(**key_fields)
            fillers = [f.format(**fields) for f in rng.sample(_FILLERS, rng.randint(1, 3))]
            fillers.insert(rng.randint(0, 1), key[0].upper() + key[1:])
            text = " ".join(fillers)
            aid = f"lit-{len(items):05d}"
            title = _TITLES[rel].format(**fields)
            meta = {"fact": fact_id, "relation": rel, "concepts": mentioned, "names": [name[c] for c in mentioned]}
            if alias is not None:
                meta["alias"] = alias
            items.append(LiteratureItem(aid, title[0].upper() + title[1:], text, meta=meta))
            by_fact.setdefault(fact_id, []).append(aid)
    return items, by_fact


def _candidates(concepts: dict[str, Concept]):
    """Every askable question: (qtype, kind, concept ids in the question, answer concept ids,
    fact ids the answer needs)."""
    out = []
    for c in concepts.values():
        if c.kind == "condition":
            out += [("yesno", "treatment_yes", (d, c.id), ("yes",), (f"{c.id}/treatment/{d}",))
                    for d in c.facts["treatments"]]
            d = c.facts["failed"]
            out.append(("yesno", "treatment_no", (d, c.id), ("no",), (f"{c.id}/failed/{d}",)))
            out.append(("factoid", "gene_of_condition", (c.id,), (c.facts["gene"],), (f"{c.id}/gene",)))
            out.append(("list", "symptoms", (c.id,), tuple(c.facts["symptoms"]), (f"{c.id}/symptoms",)))
            out.append(("list", "treatments", (c.id,), tuple(c.facts["treatments"]),
                        tuple(f"{c.id}/treatment/{d}" for d in c.facts["treatments"])))
            out.append(("summary", "what_is_condition", (c.id,), (),
                        (f"{c.id}/description", f"{c.id}/gene", f"{c.id}/symptoms")))
        elif c.kind == "compound":
            out.append(("factoid", "target_of_compound", (c.id,), (c.facts["target"],), (f"{c.id}/target",)))
            out.append(("list", "side_effects", (c.id,), tuple(c.facts["side_effects"]),
                        (f"{c.id}/side_effects",)))
            out.append(("summary", "mechanism", (c.id,), (), (f"{c.id}/target",)))
        elif c.kind == "gene" and len(c.facts.get("conditions", [])) == 1:
            out.append(("factoid", "condition_of_gene", (c.id,), tuple(c.facts["conditions"]),
                        (f"{c.facts['conditions'][0]}/gene",)))
    return out


_QUESTIONS = {
    "treatment_yes": ("Is {0} effective for the treatment of {1}?", "Does {0} improve outcomes in {1}?"),
    "treatment_no": ("Is {0} effective for the treatment of {1}?", "Does {0} improve outcomes in {1}?"),
    "gene_of_condition": ("Which gene is mutated in {0}?", "Mutations in which gene cause {0}?"),
    "target_of_compound": ("What is the molecular target of {0}?", "Which gene product does {0} block?"),
    "condition_of_gene": ("Which disease is caused by mutations in {0}?",),
    "symptoms": ("What are the symptoms of {0}?", "Which clinical features characterise {0}?"),
    "treatments": ("Which drugs are effective for {0}?", "List compounds that improve outcomes in {0}."),
    "side_effects": ("What are the side effects of {0}?", "Which adverse events are reported for {0}?"),
    "what_is_condition": ("What is {0}?", "Describe {0}."),
    "mechanism": ("What is the mechanism of action of {0}?", "How does {0} work?"),
}
QTYPE_SHARES = (("yesno", 0.3), ("factoid", 0.25), ("list", 0.25), ("summary", 0.2))


def _ideal(kind: str, q: list[Concept], a: list[Concept], concepts) -> str:
    n = [c.name[0].upper() + c.name[1:] for c in q]  # names open sentences
    if kind == "treatment_yes":
        return f"Yes. {n[0]} improves outcomes in patients with {q[1].name}, as reported by clinical trials."
    if kind == "treatment_no":
        return f"No. In trials, {q[0].name} did not improve outcomes in patients with {q[1].name}."
    if kind == "gene_of_condition":
        return f"{n[0]} is caused by mutations in {a[0].name}."
    if kind == "target_of_compound":
        return f"{n[0]} is a {q[0].facts['class']} whose target is {a[0].name}."
    if kind == "condition_of_gene":
        return f"Mutations in {q[0].name} cause {a[0].name}."
    if kind in ("symptoms", "treatments", "side_effects"):
        what = {"symptoms": f"{n[0]} presents with", "treatments": f"Drugs effective for {q[0].name} are",
                "side_effects": f"Reported side effects of {q[0].name} are"}[kind]
        return f"{what} {join_names([c.name for c in a], article='')}."
    if kind == "what_is_condition":
        f = q[0].facts
        gene = concepts[f["gene"]].name
        sym = join_names([concepts[s].name for s in f["symptoms"][:3]], article="")
        return (f"{n[0]} is a rare {f['category']} disorder with onset in {f['onset']}, caused by "
                f"mutations in {gene}. It presents with {sym}.")
    target = concepts[q[0].facts["target"]].name
    return f"{n[0]} is a {q[0].facts['class']} that acts by blocking {target}."


def build_lit_questions(seed: int, concepts: dict[str, Concept], by_fact: dict[str, list[str]],
                        n_questions: int) -> list[Query]:
    """``n_questions`` BioASQ-style questions, split over the types by ``QTYPE_SHARES``."""
    rng = item_rng(seed, "lit-questions")
    cands = _candidates(concepts)
    rng.shuffle(cands)
    quotas = {t: round(share * n_questions) for t, share in QTYPE_SHARES}
    quotas["yesno"] += n_questions - sum(quotas.values())
    chosen = []
    for qtype, _ in QTYPE_SHARES:
        pool = [c for c in cands if c[0] == qtype]
        if len(pool) < quotas[qtype]:
            raise ValueError(f"only {len(pool)} {qtype} literature questions are possible, "
                             f"{quotas[qtype]} asked; raise the number of concepts")
        chosen += pool[:quotas[qtype]]
    out = []
    for i, (qtype, kind, q_ids, a_ids, facts) in enumerate(chosen):
        qrng = item_rng(seed, "lit-question", i)
        q = [concepts[c] for c in q_ids]
        a = [concepts[c] for c in a_ids if c in concepts]
        wording = [qrng.choice(c.names) for c in q]
        text = qrng.choice(_QUESTIONS[kind]).format(*wording)
        answers = list(a_ids) if qtype == "yesno" else [c.name for c in a]
        exact = a_ids[0] if qtype == "yesno" else ([list(c.names) for c in a] if a else None)
        gold = [aid for f in facts for aid in by_fact[f]]
        out.append(Query(f"lit-q{i:04d}", text[0].upper() + text[1:], answers, qtype,
                         gold_doc_ids=gold, split="lit_questions", solution=_ideal(kind, q, a, concepts),
                         meta={"kind": kind, "concepts": [c.name for c in q],
                               "concept_ids": list(q_ids), "question_names": wording,
                               "exact_answer": exact, "facts": list(facts)}))
    return out
