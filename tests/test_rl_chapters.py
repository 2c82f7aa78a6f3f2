"""Helpers of the ReAG chapters 22-23 (``kbvqa.reag.traces``): trace prompts, teacher traces, the
relevance reading of a trace, GRPO prompts and the figures (closed, returned, with the right data)."""
import matplotlib
import pytest

matplotlib.use("Agg")

from kbvqa.parsers import parse_think_answer  # noqa: E402
from kbvqa.reag import cold_start_examples  # noqa: E402
from kbvqa.reag.traces import (  # noqa: E402
    grpo_prompts,
    load_trace_writer,
    stated_relevance,
    trace_writer_prompt,
    write_traces,
)
from kbvqa.rl import GRPOResult, SFTResult  # noqa: E402
from kbvqa.viz.reag import draw_group_advantages, draw_grpo_curves, draw_sft_curves  # noqa: E402


@pytest.fixture(scope="module")
def world():
    from kbvqa.data import get_world

    return get_world(0)


def _text(chat):
    return "\n".join(p["text"] for turn in chat for p in turn["content"] if p.get("type") == "text")


def test_trace_prompt_holds_the_tuple_and_the_relevance_label(world):
    q = world.kbvqa_train[5]
    passage = world.passage(q.evidence_ids[0])
    text = _text(trace_writer_prompt(world, q, passage, False, "I don't know"))
    assert q.question in text and passage.text in text and "**Irrelevant**" in text
    assert "I don't know" in text and "{example_" not in text
    relevant = _text(trace_writer_prompt(world, q, passage, True, q.answers[0]))
    assert "Retrieved **Relevant** Passage: " + passage.text in relevant


class FakeTeacher:
    def __init__(self, outputs):
        self.outputs = outputs

    def generate(self, prompts, n=1, **kwargs):
        assert n == 1 and len(prompts) == len(self.outputs)
        return [[o] for o in self.outputs]


def _stating(example, text="It is a kibek."):
    """A teacher's output whose trace states the relevance of ``example``'s label."""
    said = "The passage is relevant." if example.meta["relevant"] else "The passage is not relevant."
    return f"<think>{text} {said}</think><answer>wrong</answer>"


def test_write_traces_keeps_answers_and_falls_back_to_the_template(world):
    examples = cold_start_examples(world, 4, seed=1)
    wrong = "The passage is not relevant." if examples[3].meta["relevant"] else "The passage is relevant."
    teacher = FakeTeacher([_stating(examples[0]), "no tags at all", "",
                           f"<think>It is a kibek. {wrong}</think><answer>x</answer>"])   # states the other label
    out = write_traces(teacher, world, examples)
    assert [e.meta["trace_source"] for e in out] == ["teacher", "template", "template", "template"]
    assert parse_think_answer(out[0].completion).think.startswith("It is a kibek.")
    assert out[3].completion == examples[3].completion, "a trace against its label keeps the template"
    raw = write_traces(teacher, world, examples, check=False)
    assert [e.meta["trace_source"] for e in raw] == ["teacher", "template", "template", "teacher"]
    for old, new in zip(examples, out):
        assert parse_think_answer(new.completion).answer == parse_think_answer(old.completion).answer
    assert out[1].completion == examples[1].completion
    kept = write_traces(None, world, examples)
    assert [e.completion for e in kept] == [e.completion for e in examples]
    assert {e.meta["trace_source"] for e in kept} == {"template"}


def test_the_ladder_cold_start_reads_model_written_traces_when_asked(world, monkeypatch):
    """``LadderConfig(traces="model")``: the reag_generator role's model writes the cold start's traces
    (told each answer); "template" keeps the toy world's; the answer-only SFT rung never asks it."""
    from kbvqa.reag import ladder_train
    from kbvqa.reag.ladder import LadderConfig

    asked = []

    class Writer:          # states the label its prompt gives, except on the first tuple
        def generate(self, prompts, n=1, **kwargs):
            said = ["The passage is not relevant." if "**Irrelevant**" in _text(p[-1:]) else "The passage is relevant."
                    for p in prompts]                      # the user turn (the system's examples hold both)
            said[0] = "It says nothing about relevance."
            return [[f"<think>The picture shows a kibek. {s}</think><answer>x</answer>"] for s in said]

    monkeypatch.setattr(ladder_train, "load_vlm", lambda role, **kw: asked.append(role) or Writer())
    config = LadderConfig(train_examples=4, traces="model", trace_tokens=8)
    log = {}
    written = ladder_train.training_examples(world, config, traces=True, log=log)
    assert asked == ["reag_generator"]
    assert [e.meta["trace_source"] for e in written] == ["template", "teacher", "teacher", "teacher"]
    assert log["traces"]["written"] == 4 and log["traces"]["from_model"] == 3
    templated = ladder_train.training_examples(world, LadderConfig(train_examples=4), traces=True)
    assert written[0].completion == templated[0].completion, "the trace that states no relevance is rejected"
    for w, t in zip(written[1:], templated[1:]):
        assert parse_think_answer(w.completion).think.startswith("The picture shows a kibek.")
        assert parse_think_answer(w.completion).answer == parse_think_answer(t.completion).answer
    ladder_train.training_examples(world, config, traces=False)
    assert asked == ["reag_generator"]


def test_stated_relevance_on_any_string():
    assert stated_relevance("<think>The passage is relevant: x</think><answer>a</answer>") == "relevant"
    assert stated_relevance("<think>so it is not relevant.</think><answer>a</answer>") == "irrelevant"
    assert stated_relevance("<think>nothing</think>") == "unstated"
    assert stated_relevance("") == "unstated" and stated_relevance(None) == "unstated"


def test_the_cpu_trace_writer_is_the_reader_and_prompts_carry_the_evidence(world, monkeypatch):
    import kbvqa.config as kbvqa_config
    from kbvqa.config import get_profile
    from kbvqa.reag import traces

    if get_profile().is_gpu:
        pytest.skip("cpu profile only")
    monkeypatch.setattr(traces, "load_vlm", lambda role, profile=None: f"the {role} model")
    assert load_trace_writer() == "the reag_generator model"          # the reader, told each answer
    monkeypatch.setattr(kbvqa_config, "CPU_READER_ROLES", kbvqa_config.CPU_READER_ROLES - {"reag_generator"})
    assert load_trace_writer() is None                                  # the tiny model: templated traces
    q = world.kbvqa_test[0]
    (chat,) = grpo_prompts(world, [q])
    assert world.passage(q.evidence_ids[0]).text in _text(chat) and q.question in _text(chat)


def test_figures_are_closed_and_plot_the_curves():
    import matplotlib.pyplot as plt

    sft = SFTResult(steps=[0, 1, 2], loss=[1.0, 0.8, 0.5], answer_loss=[0.5, 0.4, 0.2],
                    trace_loss=[3.0, 2.5, 1.7], lr=[1e-4] * 3)
    grpo = GRPOResult({"accuracy_reward": [0.1, 0.3, 0.2], "format_reward": [0.5, 0.9, 1.0],
                       "zero_spread_groups": [0.5, 0.0, 0.25]})
    figs = [draw_sft_curves(sft), draw_grpo_curves(grpo, window=2),
            draw_group_advantages([1, 0, 0, 0, 1, 1, 1, 1], [1.5, -0.5, -0.5, -0.5, 0, 0, 0, 0], 4)]
    assert not plt.get_fignums()
    ys = [list(line.get_ydata()) for line in figs[0].axes[0].lines]
    assert [3.0, 2.5, 1.7] in ys and [0.5, 0.4, 0.2] in ys
    assert list(figs[1].axes[0].lines[0].get_ydata()) == [0.1, 0.3, 0.2]
    with pytest.raises(ValueError):
        draw_sft_curves(SFTResult())
    with pytest.raises(ValueError):
        draw_grpo_curves(GRPOResult())
    logged = [draw_sft_curves({"steps": sft.steps, "loss": sft.loss, "answer_loss": sft.answer_loss,
                               "trace_loss": sft.trace_loss}), draw_grpo_curves(dict(grpo.curves))]
    assert [list(line.get_ydata()) for line in logged[0].axes[0].lines] == ys          # a training log's curves
    assert list(logged[1].axes[0].lines[0].get_ydata()) == [0.1, 0.3, 0.2]
    with pytest.raises(ValueError):
        draw_grpo_curves({})


def test_the_sft_legend_sits_below_the_curves():
    """Chapter 22: inside the axes the legend covered the committed run's L_SFT curve (the figure
    check sees text under a legend, not lines); below them it covers no curve and stays in the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    steps = list(range(150))
    fig = draw_sft_curves({"steps": steps, "loss": [0.6 - 0.0034 * s for s in steps],
                           "answer_loss": [3e-3] * 150, "trace_loss": [3.0 - 0.017 * s for s in steps]})
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax, renderer = fig.axes[0], canvas.get_renderer()
    legend, axes = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
    assert legend.y1 < axes.y0, "the legend is below the axes"
    assert legend.x0 >= 0 and legend.x1 <= fig.bbox.x1 and legend.y0 >= 0, "and inside the figure"


def test_a_trace_writer_that_ignores_the_prompt_is_not_asked_on(world, monkeypatch):
    from kbvqa.reag import ladder_train
    from kbvqa.reag.ladder import LadderConfig

    asked = []

    class Writer:
        def __init__(self, follows):
            self.follows = follows

        def generate(self, prompts, n=1, **kwargs):
            asked.append(len(prompts))
            said = ["not relevant" if "**Irrelevant**" in _text(p[-1:]) else "relevant" for p in prompts]
            return [[f"<think>The passage is {s if self.follows else 'about a kibek'}.</think><answer>x</answer>"]
                    for s in said]

    config = LadderConfig(train_examples=6, traces="model", trace_tokens=8)
    examples = ladder_train.cold_start_examples(world, 6, seed=0)
    for follows, expected in ((False, [2]), (True, [2, 2, 2])):
        asked.clear()
        monkeypatch.setattr(ladder_train, "load_vlm", lambda role, follows=follows, **kw: Writer(follows))
        log = {}
        out = ladder_train.model_traces(world, examples, config, log=log, chunk=2)
        assert asked == expected and len(out) == 6 and log["traces"]["asked"] == sum(expected)
        assert log["traces"]["from_model"] == (6 if follows else 0)


def test_kept_set_examples_answer_when_the_evidence_is_kept_and_abstain_only_when_it_is_not(world):
    """Issue 53: the generator trains on the sets the critic keeps; the target is the gold answer
    whenever the evidence is among them, "I don't know" only when it is not."""
    from kbvqa.prompts.formats import UNKNOWN
    from kbvqa.reag.cold_start import kept_set_examples

    queries = world.kbvqa_train[:3]
    gold = [world.passage(q.evidence_ids[0]) for q in queries]
    other = [world.document_of(world.lookalikes(q.meta["entity_id"])[0].id).passages[0] for q in queries]
    kept = [[other[0], gold[0]], [other[1]], []]
    examples = kept_set_examples(world, queries, kept)
    answers = [e.completion.split("<answer>")[1].split("</answer>")[0] for e in examples]
    assert answers[0] != UNKNOWN and answers[1] == UNKNOWN and answers[2] == UNKNOWN
    assert [e.meta["passage_ids"] for e in examples] == [[p.id for p in k] for k in kept]
    assert [e.meta["gold_included"] for e in examples] == [True, False, False]
    with pytest.raises(ValueError, match="training questions only"):
        kept_set_examples(world, [world.kbvqa_test[0]], [[]])
    with pytest.raises(ValueError, match="one kept list per query"):
        kept_set_examples(world, queries, kept[:2])
