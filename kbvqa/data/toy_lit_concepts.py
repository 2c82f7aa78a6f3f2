"""Concepts and facts of the toy literature (BioASQ style): conditions, compounds, genes, symptoms.

Every concept has 2-4 names that share no word: a condition may be "Varnell syndrome",
"tolmosis", "progressive quarnic dystrophy" and "PQD"; a compound "zelantrib", "ZX-412" and
"Velora"; a gene "KRB1", "korbin-1" and "Stavo factor 3"; a symptom "joint pain" / "arthralgia".
Abstracts and questions each pick one name per concept, so a question's wording often misses the
abstracts that answer it: the reason SeRTS-style query reformulation (adding synonyms) helps BM25.

The fact base: a condition has one causal gene, 3-4 symptoms, 2-3 effective compounds, one
compound that failed in trials, a category, onset and prevalence; a compound has one target gene,
2-3 side effects and a drug class; a gene has a function and a tissue.

Leaves out: abstract and question text (``toy_literature.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kbvqa.data.toy_names import item_rng, syllable_word, unique_words

SYMPTOMS = (("fatigue", "tiredness", "lethargy"), ("joint pain", "arthralgia"),
            ("hair loss", "alopecia"), ("headache", "cephalalgia"), ("skin rash", "exanthem"),
            ("dizziness", "vertigo"), ("nausea", "queasiness"), ("muscle weakness", "myasthenia"),
            ("fever", "pyrexia"), ("itching", "pruritus"), ("nosebleeds", "epistaxis"),
            ("shortness of breath", "dyspnoea"), ("night sweats", "nocturnal hyperhidrosis"),
            ("weight loss", "cachexia"), ("double vision", "diplopia"), ("hearing loss", "hypoacusis"),
            ("swollen ankles", "pedal oedema"), ("tremor", "shakiness"), ("dry cough", "tussis"),
            ("palpitations", "heart flutter"))
_ADJECTIVES = ("progressive", "hereditary", "juvenile", "acquired", "chronic", "familial", "congenital")
_NOUNS = ("dystrophy", "neuropathy", "anaemia", "fibrosis", "myopathy", "dermatosis", "ataxia")
_DRUG_SUFFIXES = ("trib", "mab", "stat", "pril", "zole", "vir", "dronate", "lukast", "parin", "oxetine")
CATEGORIES = ("metabolic", "neurological", "skin", "blood", "muscle", "immune", "kidney")
ONSETS = ("early childhood", "adolescence", "adult life", "old age")
DRUG_CLASSES = ("kinase inhibitor", "monoclonal antibody", "enzyme activator",
                "ion channel blocker", "receptor agonist", "antisense oligonucleotide")
GENE_FUNCTIONS = ("a membrane transporter", "a DNA repair enzyme", "a structural protein",
                  "a signalling kinase", "a transcription factor", "an ion channel subunit")
TISSUES = ("liver", "brain", "skin", "skeletal muscle", "kidney", "bone marrow", "retina")


@dataclass
class Concept:
    id: str                     # "cond07", "comp12", "gene03", "symp05"
    kind: str                   # condition | compound | gene | symptom
    names: tuple[str, ...]      # canonical name first
    facts: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.names[0]


def _acronym(words: str, taken: set[str]) -> str:
    base = "".join(w[0] for w in words.split()).upper()
    name, i = base, 2
    while name.lower() in taken:
        name, i = f"{base}{i}", i + 1
    taken.add(name.lower())
    return name


def build_concepts(seed: int, n_conditions: int, n_compounds: int, n_genes: int) -> list[Concept]:
    """All concepts with their names and facts (deterministic in ``seed``)."""
    rng = item_rng(seed, "literature-concepts")
    taken: set[str] = set()
    concepts: list[Concept] = []
    symptoms = [Concept(f"symp{i:02d}", "symptom", names) for i, names in enumerate(SYMPTOMS)]
    taken.update(n.lower() for s in symptoms for n in s.names)
    genes = []
    roots = unique_words(rng, n_genes * 2, taken, syllables=(1, 2), min_len=3, max_len=7)
    for i in range(n_genes):
        symbol = _acronym(" ".join(roots[2 * i][:3]), taken) + str(rng.randint(1, 9))
        names = [symbol, f"{roots[2 * i].rstrip('aeiou')}in-{rng.randint(1, 4)}",
                 f"{roots[2 * i + 1].capitalize()} factor {rng.randint(2, 9)}"]
        genes.append(Concept(f"gene{i:02d}", "gene", tuple(names[:rng.choice((2, 3, 3))]),
                             {"function": rng.choice(GENE_FUNCTIONS), "tissue": rng.choice(TISSUES),
                              "chromosome": rng.randint(1, 22)}))
    compounds = []
    roots = unique_words(rng, n_compounds * 2, taken, syllables=(2, 2), min_len=4, max_len=7)
    for i in range(n_compounds):
        letters = syllable_word(rng, 1)[:1].upper() + rng.choice("XQZVKT")
        code = f"{letters}-{rng.randint(100, 999)}"
        while code.lower() in taken:
            code = f"{letters}-{rng.randint(100, 999)}"
        taken.add(code.lower())
        names = [roots[2 * i] + rng.choice(_DRUG_SUFFIXES), code, roots[2 * i + 1].capitalize()]
        compounds.append(Concept(f"comp{i:02d}", "compound", tuple(names[:rng.choice((2, 3))]),
                                 {"class": rng.choice(DRUG_CLASSES)}))
    conditions = []
    roots = unique_words(rng, n_conditions * 3, taken, syllables=(1, 2), min_len=3, max_len=7)
    for i in range(n_conditions):
        eponym = f"{roots[3 * i].capitalize()} syndrome"
        osis = f"{roots[3 * i + 1]}osis"
        descriptive = f"{rng.choice(_ADJECTIVES)} {roots[3 * i + 2]}ic {rng.choice(_NOUNS)}"
        forms = [eponym, osis, descriptive]
        rng.shuffle(forms)
        names = forms[:rng.choice((2, 3, 3))]
        if descriptive in names and rng.random() < 0.6:
            names.append(_acronym(descriptive, taken))
        conditions.append(Concept(f"cond{i:02d}", "condition", tuple(names),
                                  {"category": rng.choice(CATEGORIES), "onset": rng.choice(ONSETS),
                                   "prevalence": rng.randint(2, 90)}))
    _link(rng, conditions, compounds, genes, symptoms)
    concepts.extend(conditions + compounds + genes + symptoms)
    return concepts


def _link(rng, conditions, compounds, genes, symptoms) -> None:
    """Draw the relations between concepts (stored as concept ids in ``facts``)."""
    causal = rng.sample(genes, len(conditions))
    for c, g in zip(conditions, causal):
        c.facts["gene"] = g.id
        g.facts.setdefault("conditions", []).append(c.id)
        c.facts["symptoms"] = [s.id for s in rng.sample(symptoms, rng.choice((3, 4)))]
        picked = rng.sample(compounds, rng.choice((2, 3)) + 1)
        c.facts["treatments"] = [d.id for d in picked[:-1]]
        c.facts["failed"] = picked[-1].id
    for d in compounds:
        d.facts["target"] = rng.choice(genes).id
        d.facts["side_effects"] = [s.id for s in rng.sample(symptoms, rng.choice((2, 3)))]
