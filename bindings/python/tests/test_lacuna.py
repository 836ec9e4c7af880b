"""Tests of the Python package `lacuna` on the demo models built into it (no download).

The task model answers `rev: WORD =` with the word reversed, so greedy generations have a
known text. Error messages are compared with the Rust errors' Display text, which the CLI and
the server print too.
"""

import gc
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

import lacuna

REPO = Path(__file__).resolve().parents[3]
TASKS_GGUF = REPO / "models" / "lacuna-tiny-tasks.gguf"

# A long generation on the task model: 96 steps over a 108-token canvas (about 30 ms a step
# on one thread here).
LONG = dict(gen_length=96, steps=96, block_length=96, keep_after_eos=True)


@pytest.fixture(scope="module")
def tasks():
    return lacuna.Engine.demo("tasks", threads=2)


@pytest.fixture(scope="module")
def kjv():
    return lacuna.Engine.demo("kjv", threads=2)


def wait_idle(engine, timeout=10.0):
    """Waits until no generation runs on `engine`; returns whether that happened."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if engine.stats()["active"] == 0:
            return True
        time.sleep(0.01)
    return False


# --- generate ---------------------------------------------------------------------------


def test_package_surface():
    assert lacuna.__version__ == "0.1.0"
    assert issubclass(lacuna.SettingsError, lacuna.LacunaError)
    assert issubclass(lacuna.SettingsError, ValueError)
    assert "gen_length" in lacuna.SETTINGS and "constraint" in lacuna.SETTINGS
    assert lacuna.Engine.demos() == ["kjv", "tasks", "tasks-llada2"]
    assert set(lacuna.__all__) <= set(dir(lacuna))


def test_generate_is_deterministic_and_reports_stats(tasks):
    a = tasks.generate("rev: lantern =", seed=0)
    b = tasks.generate("rev: lantern =", seed=0)
    assert a.text == " nretnal"
    assert (a.text, a.tokens, a.canvas) == (b.text, b.tokens, b.canvas)
    assert a.tokens and a.prompt_tokens == tasks.tokenize("rev: lantern =")
    assert tasks.decode(a.tokens) == a.text
    s = a.stats
    assert s.steps >= 1 and s.denoiser_calls >= s.steps and a.forwards == s.denoiser_calls
    assert s.positions_computed > 0 and s.logit_rows > 0 and s.cache_fills == 0
    assert s.finish == "eos" and s.eos_index == len(a.tokens) and s.eos_token in tasks.eos_ids
    t = a.timings
    assert len(t.step_ms) == s.steps and t.total_s > 0 and t.prepare_s >= 0
    assert t.step_ms_median > 0 and t.encode_ms == []
    assert a.tokens_per_s > 0 and a.tokens_per_forward > 0 and a.positions_per_forward > 0
    assert a.logprobs is None and a.infill is None
    assert str(a) == a.text


def test_sampling_with_a_seed_repeats(tasks):
    kw = dict(temperature=1.0, seed=7, remasking="random")
    assert tasks.generate("sort: 41 7 93 7 0 =", **kw).tokens == tasks.generate(
        "sort: 41 7 93 7 0 =", **kw
    ).tokens


def test_token_prompt_equals_text_prompt(tasks):
    ids = tasks.tokenize("rev: lantern =")
    assert tasks.generate(ids).text == tasks.generate("rev: lantern =").text


def test_a_model_file_gives_what_the_demo_gives(tasks):
    engine = lacuna.Engine(str(TASKS_GGUF), threads=1, weights="auto", device="cpu")
    assert engine.demo_name is None and tasks.demo_name == "tasks"
    assert engine.arch == "llada" and engine.context_length == 128 and engine.threads == 1
    assert not engine.on_gpu
    # A file carries no demo schedule: give the demo's (32 tokens, one a step, blocks of 8).
    schedule = dict(gen_length=32, steps=32, block_length=8)
    assert engine.generate("rev: lantern =", **schedule).text == " nretnal"
    assert lacuna.Engine(TASKS_GGUF).generate("rev: lantern =", **schedule).text == " nretnal"


def test_hf_reference_is_read_from_the_hugging_face_cache(tmp_path, monkeypatch):
    # The cache layout `huggingface_hub` writes, the file at the commit `refs/main` names.
    repo = tmp_path / "models--lacuna--tiny-tasks"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    shutil.copy(TASKS_GGUF, snapshot / "lacuna-tiny-tasks-Q8_0.gguf")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    engine = lacuna.Engine("hf:lacuna/tiny-tasks:Q8_0", threads=1)
    out = engine.generate("rev: lantern =", gen_length=32, steps=32, block_length=8)
    assert out.text == " nretnal"
    with pytest.raises(lacuna.LacunaError) as e:
        lacuna.Engine("hf:nobody/nothing:Q4_K_M")
    assert str(e.value) == (
        f"nobody/nothing:Q4_K_M is not in the Hugging Face cache ({tmp_path}) and "
        "HF_HUB_OFFLINE is set; fetch it first with `lacuna pull nobody/nothing:Q4_K_M`"
    )
    with pytest.raises(lacuna.SettingsError, match="no '/' between owner and repository"):
        lacuna.Engine("hf:nobody")


# --- stream -----------------------------------------------------------------------------


def test_stream_yields_every_step_then_the_output(tasks):
    settings = dict(gen_length=16, steps=8, block_length=8, seed=0)
    events = list(tasks.stream("sort: 41 7 93 7 0 =", **settings))
    *canvases, out = events
    assert isinstance(out, lacuna.Output)
    assert canvases and all(isinstance(c, lacuna.Canvas) for c in canvases)
    assert out.text == tasks.generate("sort: 41 7 93 7 0 =", **settings).text == " 0 7 7 41 93"
    assert [c.step for c in canvases] == list(range(len(canvases)))
    assert len(canvases) == out.stats.steps
    masks = [c.masks for c in canvases]
    assert masks == sorted(masks, reverse=True), "masks never come back"
    assert masks[0] < 16 and masks[-1] == 0
    for c in canvases:
        assert c.total_steps == 8 and c.num_blocks == 2 and len(c.tokens) == 16
        assert c.masks == c.tokens.count(c.mask_id) == c.pieces.count(None)
        assert c.text.count(lacuna.MASK_GLYPH) == c.masks
        assert len(c.committed) == len(c.confidences) == 2
        assert all(c.tokens[p] != c.mask_id for p in c.committed)
    # The last canvas is the final one: the answer, then end tokens.
    assert canvases[-1].tokens[: len(out.tokens)] == out.tokens
    assert canvases[-1].text.startswith(out.text)


def test_stream_result_and_repeated_next(tasks):
    stream = tasks.stream("rev: lantern =", seed=0)
    assert stream.result is None
    last = None
    for event in stream:
        last = event
    assert isinstance(last, lacuna.Output) and stream.result is not None
    assert stream.result.text == last.text == " nretnal"
    with pytest.raises(StopIteration):
        next(stream)


def test_breaking_out_of_a_stream_cancels_the_generation(tasks):
    assert wait_idle(tasks)
    steps_before = tasks.stats()["steps"]
    seen = 0
    for canvas in tasks.stream("rev: lantern =", **LONG):
        seen += 1
        if seen == 2:
            break
    gc.collect()
    assert wait_idle(tasks), "the cancelled generation ended"
    ran = tasks.stats()["steps"] - steps_before
    assert 2 <= ran < LONG["steps"], f"{ran} steps ran of {LONG['steps']}"
    # The engine goes on working.
    assert tasks.generate("rev: lantern =", seed=0).text == " nretnal"


def test_closing_a_stream_stops_it(tasks):
    with tasks.stream("rev: lantern =", **LONG) as stream:
        first = next(stream)
        assert isinstance(first, lacuna.Canvas)
    assert stream.cancelled
    assert list(stream) == []
    assert stream.result is None
    assert wait_idle(tasks)
    s = tasks.stream("rev: lantern =", **LONG)
    next(s)
    s.close()
    assert list(s) == [] and s.cancelled


def test_stream_raises_bad_settings_before_running(tasks):
    with pytest.raises(lacuna.SettingsError, match="^`steps` must be at least 1$"):
        tasks.stream("x", steps=0)
    with pytest.raises(TypeError, match="'bogus'"):
        tasks.stream("x", bogus=1)


# --- chat, infill, logprobs, constraints, scoring -----------------------------------------


def test_chat_goes_through_the_template(kjv):
    messages = [{"role": "user", "content": "And God said"}]
    out = kjv.chat(messages, gen_length=32, steps=16, block_length=32, seed=1)
    assert kjv.has_chat_template
    assert out.text and len(out.prompt_tokens) > len(kjv.tokenize("And God said"))
    again = kjv.chat(messages, gen_length=32, steps=16, block_length=32, seed=1)
    assert again.tokens == out.tokens
    *_, streamed = kjv.stream_chat(messages, gen_length=32, steps=16, block_length=32, seed=1)
    assert streamed.tokens == out.tokens


def test_chat_errors(tasks, kjv):
    with pytest.raises(lacuna.SettingsError) as e:
        tasks.chat([{"role": "user", "content": "hi"}])
    assert str(e.value) == "the model has no chat template (tokenizer.chat_template)"
    with pytest.raises(lacuna.SettingsError, match="^the chat prompt has no messages$"):
        kjv.chat([])
    with pytest.raises(TypeError, match=r"messages\[0\] has no \"content\""):
        kjv.chat([{"role": "user"}])
    with pytest.raises(TypeError, match="messages must be a list"):
        kjv.chat("hi")


def test_infill(kjv):
    prefix, suffix = "And God said, Let there be", " and there was light."
    out = kjv.infill(prefix, suffix, gen_length=4, steps=4, block_length=4)
    assert len(out.tokens) <= 4 and out.infill is None
    assert out.prompt_tokens == kjv.tokenize(prefix)
    again = kjv.infill(prefix, suffix, gen_length=4, steps=4, block_length=4)
    assert again.tokens == out.tokens
    *canvases, streamed = kjv.stream_infill(prefix, suffix, gen_length=4, steps=4, block_length=4)
    assert streamed.tokens == out.tokens
    assert canvases and all(len(c.tokens) == 4 for c in canvases), "the middle only"
    search = kjv.infill(prefix, suffix, gen_length=4, steps=4, infill_lengths=[2, 4])
    assert [c.length for c in search.infill.candidates] == [2, 4]
    assert search.text == search.infill.candidates[search.infill.chosen].text


def test_infill_needs_a_bidirectional_model():
    llada2 = lacuna.Engine.demo("tasks-llada2", threads=1)
    with pytest.raises(lacuna.SettingsError) as e:
        llada2.infill("rev: lantern =", " done")
    assert str(e.value) == (
        "llada2 cannot infill (suffix): its attention is block-causal, so the positions "
        "between prompt and suffix never see the suffix; use a bidirectional model (LLaDA, "
        "LLaDA-MoE, Dream, RND1)"
    )
    # It generates, with its own sampler.
    assert llada2.generate("rev: lantern =").text == " nretnal"


def test_logprobs(tasks):
    out = tasks.generate("add: 12+30=", logprobs=3)
    assert out.text == "42"
    assert out.logprobs is not None and len(out.logprobs) == len(out.tokens)
    for token, record in zip(out.tokens, out.logprobs):
        assert isinstance(record, lacuna.TokenLogprob)
        assert record.token == token and record.logprob <= 0
        assert record.text == record.bytes.decode("utf-8", "replace")
        assert len(record.top) == 3
        assert [t.logprob for t in record.top] == sorted((t.logprob for t in record.top), reverse=True)
        assert record.top[0].logprob >= record.logprob
    assert "".join(r.text for r in out.logprobs) == out.text
    with pytest.raises(lacuna.SettingsError) as e:
        tasks.generate("x", logprobs=21)
    assert str(e.value) == "`logprobs` must be at most 20, got 21" and e.value.setting == "logprobs"


def test_constraints(tasks):
    out = tasks.generate("rev: lantern =", constraint={"choice": ["yes", "no"]})
    assert out.text in ("yes", "no")
    digits = tasks.generate("add: 12+30=", constraint={"regex": "[0-9]{2}"})
    assert len(digits.text) == 2 and digits.text.isdigit()
    with pytest.raises(lacuna.SettingsError, match="dict with one key"):
        tasks.generate("x", constraint={"regex": "a", "choice": ["b"]})
    with pytest.raises(TypeError):
        tasks.generate("x", constraint=3)


def test_score(tasks):
    score = tasks.score("add: 12+30=42", samples=4, seed=1)
    assert score.tokens == tasks.tokenize("add: 12+30=42")
    assert len(score.logprobs) == len(score.tokens) == len(score.exact)
    assert score.logprobs[0] is None and all(v is not None for v in score.logprobs[1:])
    assert score.passes > 0
    assert score.log_likelihood(1) == pytest.approx(sum(score.logprobs[1:]))
    assert tasks.score("add: 12+30=42", samples=4, seed=1).logprobs == score.logprobs
    top = tasks.score([5, 6, 7], samples=2, logprobs=2)
    assert [len(t) for t in top.top[1:]] == [2, 2]
    with pytest.raises(lacuna.SettingsError, match="^likelihood_samples must be between 1 and"):
        tasks.score("add: 1+1=2", samples=0)
    with pytest.raises(lacuna.SettingsError, match="^the text to score is empty$"):
        tasks.score([])


# --- errors -----------------------------------------------------------------------------


def test_unknown_keyword_is_a_type_error(tasks):
    with pytest.raises(TypeError) as e:
        tasks.generate("x", gen_lenght=8)
    assert "generate() got an unexpected keyword argument 'gen_lenght'" in str(e.value)
    with pytest.raises(TypeError, match="infill\\(\\) got an unexpected keyword argument 'prompt'"):
        tasks.infill("a", "b", prompt="c")
    with pytest.raises(TypeError):
        tasks.score("x", likelihood_samples=4)


@pytest.mark.parametrize(
    "settings, message, setting",
    [
        # lacuna::SettingsError's Display.
        (dict(steps=0), "`steps` must be at least 1", "steps"),
        (dict(gen_length=0), "`gen_length` must be at least 1", "gen_length"),
        (dict(block_length=0), "`block_length` must be at least 1", "block_length"),
        (
            dict(threshold=0.5),
            "`threshold` is a parallel-decoding rule: the rules `threshold`, `factor` and "
            "`entropy_bound` need `parallel` (or `fast`)",
            "threshold",
        ),
        (
            dict(parallel=True, threshold=0.5, factor=1.0),
            "give at most one of `threshold`, `factor`, `entropy_bound`",
            None,
        ),
        (dict(editing_threshold=0.5), "`editing_threshold` needs `editing`", "editing_threshold"),
        (dict(infill_lengths=[4, 0]), "`infill_lengths` must be at least 1", "infill_lengths"),
        # lacuna::Error's Display, from the sampler's checks.
        (dict(gen_length=32, block_length=5), "gen_length 32 is not a multiple of block_length 5", None),
        (
            dict(gen_length=32, block_length=8, steps=6),
            "steps 6 is not a multiple of the number of blocks 4",
            None,
        ),
        (
            dict(top_p=0.9),
            "top_p is not a setting of the llada sampler (it belongs to the Dream sampler)",
            "top_p",
        ),
        (
            dict(gen_length=127, block_length=127),
            "prompt (2 tokens) + gen_length (127) = 129 tokens exceeds the model's context length 128",
            None,
        ),
        # The names of a setting's values, as the CLI and the server parse them.
        (dict(cache="triple"), "`triple` is not a cache policy (valid: none, prefix, dual)", "cache"),
        (
            dict(remasking="best"),
            "`best` is not a remasking strategy (valid: low_confidence, random)",
            "remasking",
        ),
        # Out of the int range (Python's own checks, in the same voice).
        (dict(steps=-1), "`steps` must be at least 0, got -1", "steps"),
        (dict(seed=-1), "`seed` must be between 0 and 2**64 - 1, got -1", "seed"),
    ],
)
def test_bad_settings_raise_the_rust_message(tasks, settings, message, setting):
    with pytest.raises(lacuna.SettingsError) as e:
        tasks.generate("x", **settings)
    assert str(e.value) == message
    assert e.value.setting == setting
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize(
    "settings",
    [dict(steps="8"), dict(steps=8.0), dict(steps=True), dict(temperature="hot"), dict(fast=1)],
)
def test_wrong_types_are_type_errors(tasks, settings):
    with pytest.raises(TypeError, match=f"`{next(iter(settings))}` must be"):
        tasks.generate("x", **settings)


def test_none_means_not_given(tasks):
    assert tasks.generate("rev: lantern =", steps=None, temperature=None).text == " nretnal"


def test_load_errors(tmp_path):
    missing = tmp_path / "missing.gguf"
    with pytest.raises(lacuna.LacunaError) as e:
        lacuna.Engine(missing)
    assert str(e.value) == f"cannot read {missing}: No such file or directory (os error 2)"
    assert not isinstance(e.value, ValueError)
    text = tmp_path / "notes.gguf"
    text.write_text("not a model")
    with pytest.raises(lacuna.LacunaError, match=f"^{text} is not a valid GGUF file: "):
        lacuna.Engine(text)
    with pytest.raises(lacuna.SettingsError) as e:
        lacuna.Engine.demo("bible")
    assert str(e.value) == 'unknown demo model "bible": expected one of kjv, tasks, tasks-llada2'
    with pytest.raises(lacuna.SettingsError) as e:
        lacuna.Engine.demo("tasks", device="tpu")
    assert str(e.value) == "`tpu` is not a device (valid: auto, cpu, cuda, cuda:N)"
    with pytest.raises(lacuna.SettingsError) as e:
        lacuna.Engine.demo("tasks", weights="tiny")
    assert str(e.value) == "`tiny` is not a weight layout (valid: auto, compact, fast)"
    with pytest.raises(lacuna.SettingsError, match="^threads must be at least 1$"):
        lacuna.Engine.demo("tasks", threads=0)


# --- threads and the GIL ----------------------------------------------------------------


def test_the_gil_is_released_while_generating():
    engine = lacuna.Engine.demo("tasks", threads=1)
    done = threading.Event()
    span = {}

    def generate():
        span["start"] = time.monotonic()
        engine.generate("rev: lantern =", **LONG)
        span["end"] = time.monotonic()
        done.set()

    thread = threading.Thread(target=generate)
    thread.start()
    # This thread's Python loop runs while the other generates: were the GIL held for the
    # generation, no iteration would run between its start and its end.
    ticks = []
    while not done.is_set():
        ticks.append(time.monotonic())
        sum(range(100))
    thread.join()
    during = [t for t in ticks if span["start"] < t < span["end"]]
    duration = span["end"] - span["start"]
    assert duration > 0.3, f"the generation took {duration:.3f} s"
    assert len(during) > 100, f"{len(during)} iterations in {duration:.3f} s"
    edges = [span["start"]] + during + [span["end"]]
    longest = max(b - a for a, b in zip(edges, edges[1:]))
    assert longest < duration / 2, f"the loop stopped for {longest:.3f} s of {duration:.3f} s"


def test_two_threads_generate_at_once_on_one_engine():
    engine = lacuna.Engine.demo("tasks", threads=1)
    prompts = ["rev: lantern =", "rev: harbor ="]
    alone = [engine.generate(p, **LONG).tokens for p in prompts]
    before = engine.stats()
    barrier = threading.Barrier(2)
    spans, results = {}, {}

    def generate(i):
        barrier.wait()
        spans[i] = (time.monotonic(), None)
        out = engine.generate(prompts[i], **LONG)
        spans[i] = (spans[i][0], time.monotonic())
        results[i] = out.tokens

    threads = [threading.Thread(target=generate, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (a0, a1), (b0, b1) = spans[0], spans[1]
    overlap = min(a1, b1) - max(a0, b0)
    assert overlap > 0.5 * min(a1 - a0, b1 - b0), f"overlap {overlap:.3f} s of {spans}"
    # Batched or not, each generation is token for token what it gives alone.
    assert [results[0], results[1]] == alone
    after = engine.stats()
    assert after["passes"] - before["passes"] == 2 * LONG["steps"]
    assert after["forwards"] - before["forwards"] <= 2 * LONG["steps"]


def test_keyboard_interrupt_cancels_a_generation():
    import _thread

    engine = lacuna.Engine.demo("tasks", threads=1)
    timer = threading.Timer(0.2, _thread.interrupt_main)
    raised_in_generate = False
    try:
        try:
            timer.start()
            engine.generate("rev: lantern =", **LONG)
        except KeyboardInterrupt:
            raised_in_generate = True
            raise
        time.sleep(2)  # an interrupt that came too late lands here
    except KeyboardInterrupt:
        pass
    finally:
        timer.cancel()
    assert raised_in_generate
    assert wait_idle(engine)
    assert engine.stats()["steps"] < LONG["steps"]
    assert engine.generate("rev: lantern =", seed=0).text == " nretnal"


# --- docs -------------------------------------------------------------------------------


def test_the_docs_example_runs(capsys):
    import re

    doc = (REPO / "docs" / "python.md").read_text()
    example = re.search(r"^```python\n(.*?)^```", doc, re.S | re.M).group(1)
    exec(compile(example, "docs/python.md", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.startswith(" nretnal\n")
    assert "done:  0 7 7 41 93" in printed
    assert printed.rstrip().endswith("`steps` must be at least 1")
