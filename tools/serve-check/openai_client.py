#!/usr/bin/env python3
"""Checks `lacuna serve` against the official OpenAI Python client (version pinned in
requirements.txt): chat, streamed chat, completions, log-probabilities, infilling (`suffix`), model list, error mapping, API key, and a
clean exit on SIGTERM. Exits non-zero with a message naming the first failed check.

Usage (repository root):
    python3 -m pip install -r tools/serve-check/requirements.txt
    cargo build --release -p lacuna-cli
    python3 tools/serve-check/openai_client.py target/release/lacuna
"""
import argparse, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lacuna_server import LacunaServer, ServerError, fail  # noqa: E402

try:
    import openai
except ImportError:
    fail("the `openai` package is missing: python3 -m pip install -r tools/serve-check/requirements.txt")

MODEL = "lacuna-demo"
# Fixed, quick settings: temperature 0 and a seed, so the streamed and non-streamed answers
# must agree token for token. 64 tokens = two 32-token blocks, 8 steps.
SETTINGS = dict(max_tokens=64, temperature=0, seed=7, extra_body={"diffusion": {"steps": 8}})
MESSAGES = [{"role": "user", "content": "Who made the heaven and the earth?"}]


def check(cond, msg):
    if not cond:
        fail(msg)


def expect_error(kind, what, call):
    try:
        r = call()
    except kind as e:
        print(f"ok   {what}: {kind.__name__} (HTTP {e.status_code}: {e.message})")
        return e
    except openai.APIError as e:
        fail(f"{what}: expected {kind.__name__}, got {type(e).__name__}: {e}")
    fail(f"{what}: expected {kind.__name__}, the call succeeded: {r}")


def usage_ok(u, what):
    check(u is not None, f"{what}: no usage")
    check(u.prompt_tokens > 0, f"{what}: usage.prompt_tokens = {u.prompt_tokens}")
    check(u.completion_tokens > 0, f"{what}: usage.completion_tokens = {u.completion_tokens}")
    check(u.total_tokens == u.prompt_tokens + u.completion_tokens,
          f"{what}: usage.total_tokens {u.total_tokens} != {u.prompt_tokens} + {u.completion_tokens}")


def main_checks(client):
    # 1. Chat completion.
    r = client.chat.completions.create(model=MODEL, messages=MESSAGES, **SETTINGS)
    check(len(r.choices) == 1, f"chat: {len(r.choices)} choices")
    c = r.choices[0]
    answer = c.message.content
    check(isinstance(answer, str) and answer.strip(), f"chat: empty content: {r}")
    check(c.message.role == "assistant", f"chat: role {c.message.role!r}")
    check(c.finish_reason in ("stop", "length"), f"chat: finish_reason {c.finish_reason!r}")
    check(r.model == MODEL, f"chat: model {r.model!r}")
    check(r.object == "chat.completion", f"chat: object {r.object!r}")
    usage_ok(r.usage, "chat")
    print(f"ok   chat: {len(answer)} chars, finish {c.finish_reason}, usage {r.usage.prompt_tokens}+"
          f"{r.usage.completion_tokens}: {answer[:60]!r}")

    # 2. The same request streamed: several content deltas that add up to the same answer,
    # then a usage chunk with no choices.
    stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True,
                                            stream_options={"include_usage": True}, **SETTINGS)
    deltas, finish, usage, after_usage = [], None, None, 0
    for chunk in stream:
        check(chunk.object == "chat.completion.chunk", f"stream: object {chunk.object!r}")
        if usage is not None:
            after_usage += 1
        if chunk.usage is not None:
            check(not chunk.choices, f"stream: the usage chunk has choices: {chunk}")
            usage = chunk.usage
            continue
        check(len(chunk.choices) == 1, f"stream: chunk with {len(chunk.choices)} choices: {chunk}")
        ch = chunk.choices[0]
        if ch.delta.content:
            deltas.append(ch.delta.content)
        if ch.finish_reason is not None:
            check(finish is None, "stream: two chunks with a finish_reason")
            finish = ch.finish_reason
    streamed = "".join(deltas)
    check(len(deltas) >= 2, f"stream: only {len(deltas)} content delta(s): {deltas!r}")
    check(streamed == answer, f"stream: concatenated deltas differ from the non-streamed answer:\n"
                              f"  streamed: {streamed!r}\n  answer:   {answer!r}")
    check(finish == c.finish_reason, f"stream: finish_reason {finish!r}, non-streamed {c.finish_reason!r}")
    usage_ok(usage, "stream")
    check(after_usage == 0, f"stream: {after_usage} chunk(s) after the usage chunk")
    check((usage.prompt_tokens, usage.completion_tokens) ==
          (r.usage.prompt_tokens, r.usage.completion_tokens),
          f"stream: usage {usage} differs from the non-streamed {r.usage}")
    print(f"ok   stream: {len(deltas)} content deltas, equal to the non-streamed answer, usage chunk last")

    # 3. Completion.
    r = client.completions.create(model=MODEL, prompt="In the beginning God created", **SETTINGS)
    check(len(r.choices) == 1, f"completion: {len(r.choices)} choices")
    t = r.choices[0]
    check(isinstance(t.text, str) and t.text.strip(), f"completion: empty text: {r}")
    check(t.finish_reason in ("stop", "length"), f"completion: finish_reason {t.finish_reason!r}")
    check(r.object == "text_completion", f"completion: object {r.object!r}")
    usage_ok(r.usage, "completion")
    print(f"ok   completion: {t.text[:60]!r}, finish {t.finish_reason}")

    # 3b. Log-probabilities on both endpoints: one entry per completion token, each <= 0, the
    # alternatives sorted (each token's figures come from the step that committed it).
    r = client.chat.completions.create(model=MODEL, messages=MESSAGES, logprobs=True,
                                       top_logprobs=3, **SETTINGS)
    content = r.choices[0].logprobs.content
    check(len(content) == r.usage.completion_tokens,
          f"chat logprobs: {len(content)} entries for {r.usage.completion_tokens} tokens")
    for e in content:
        check(e.logprob <= 0, f"chat logprobs: {e.token!r} has logprob {e.logprob}")
        check(bytes(e.bytes).decode("utf-8", "replace") == e.token, f"chat logprobs: bytes of {e.token!r}")
        tops = [t.logprob for t in e.top_logprobs]
        check(len(tops) == 3 and tops == sorted(tops, reverse=True), f"chat top_logprobs: {tops}")
    check("".join(e.token for e in content).strip() != "", "chat logprobs: empty tokens")
    print(f"ok   chat logprobs: {len(content)} tokens, first {content[0].token!r} {content[0].logprob:.3f}")
    r = client.completions.create(model=MODEL, prompt="In the beginning God created", logprobs=2,
                                  **SETTINGS)
    lp = r.choices[0].logprobs
    n = r.usage.completion_tokens
    check(len(lp.tokens) == n and len(lp.token_logprobs) == n and len(lp.top_logprobs) == n
          and len(lp.text_offset) == n, f"completion logprobs: lengths for {n} tokens: {lp}")
    check(all(v <= 0 for v in lp.token_logprobs), f"completion logprobs: {lp.token_logprobs}")
    print(f"ok   completion logprobs: {n} tokens")
    expect_error(openai.BadRequestError, "top_logprobs over 20", lambda: client.chat.completions.create(
        model=MODEL, messages=MESSAGES, logprobs=True, top_logprobs=21, max_tokens=32))

    # 3c. Infilling through OpenAI's own `suffix` argument: the middle changes with the
    # suffix, carries log-probabilities, streams to the same text, and a length search reports
    # its candidates in the `diffusion` extension.
    fill = dict(model=MODEL, prompt="And God said,", max_tokens=16, temperature=0, seed=1,
                extra_body={"diffusion": {"steps": 16, "block_length": 16}})
    a = client.completions.create(suffix=" and there was light.", logprobs=1, **fill)
    b = client.completions.create(suffix=" and it was so.", **fill)
    plain = client.completions.create(**fill)
    check(a.choices[0].text != plain.choices[0].text or b.choices[0].text != plain.choices[0].text,
          f"suffix: the middle ignores the suffix: {a.choices[0].text!r} {plain.choices[0].text!r}")
    lp = a.choices[0].logprobs
    check(len(lp.tokens) == a.usage.completion_tokens and all(v <= 0 for v in lp.token_logprobs),
          f"suffix logprobs: {lp}")
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        suffix=" and there was light.", stream=True, **fill) if c.choices)
    check(streamed == a.choices[0].text, f"suffix stream: {streamed!r} != {a.choices[0].text!r}")
    search = dict(fill, extra_body={"diffusion": {"steps": 16, "block_length": 16, "infill_lengths": [4, 8, 16]}})
    r = client.completions.create(suffix=" and there was light.", **search)
    cands = (r.model_extra or {}).get("diffusion", {}).get("infill_candidates")
    check(cands and [c["length"] for c in cands] == [4, 8, 16], f"infill_lengths: candidates {cands}")
    print(f"ok   suffix: {a.choices[0].text!r} before ' and there was light.'; search chose "
          f"{r.model_extra['diffusion']['infill_length']} of {[c['length'] for c in cands]}")

    # 4. Models.
    ids = [m.id for m in client.models.list()]
    check(MODEL in ids, f"models: {MODEL} not in {ids}")
    check(client.models.retrieve(MODEL).id == MODEL, "models.retrieve: wrong id")
    print(f"ok   models: {ids}")

    # 5. Errors.
    expect_error(openai.NotFoundError, "unknown model", lambda: client.chat.completions.create(
        model="no-such-model", messages=MESSAGES, **SETTINGS))
    e = expect_error(openai.BadRequestError, "unsupported parameter", lambda: client.chat.completions.create(
        model=MODEL, messages=MESSAGES, max_tokens=32, extra_body={"foo": 1}))
    check(getattr(e, "param", None) == "foo", f"unsupported parameter: param {getattr(e, 'param', None)!r}, want 'foo'")
    expect_error(openai.BadRequestError, "unsupported diffusion setting", lambda: client.chat.completions.create(
        model=MODEL, messages=MESSAGES, max_tokens=32, extra_body={"diffusion": {"bogus": 1}}))
    expect_error(openai.BadRequestError, "context overflow", lambda: client.completions.create(
        model=MODEL, prompt="In the beginning " * 200, max_tokens=64))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", help="the lacuna binary, e.g. target/release/lacuna")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per request")
    a = ap.parse_args()
    t0 = time.monotonic()
    print(f"openai {openai.__version__}, {a.binary}")
    try:
        with LacunaServer(a.binary, ["--demo"]) as server:
            print(f"server at {server.base_url}")
            client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="unused",
                                   timeout=a.timeout, max_retries=0)
            try:
                main_checks(client)
            except openai.APIError as e:
                fail(f"unexpected {type(e).__name__}: {e}\nserver log:\n{server.log()}")
            with LacunaServer(a.binary, ["--demo", "--api-key", "k"]) as keyed:
                url = keyed.base_url + "/v1"
                wrong = openai.OpenAI(base_url=url, api_key="wrong", timeout=a.timeout, max_retries=0)
                expect_error(openai.AuthenticationError, "wrong API key", lambda: wrong.models.list())
                right = openai.OpenAI(base_url=url, api_key="k", timeout=a.timeout, max_retries=0)
                check(MODEL in [m.id for m in right.models.list()], "right API key: models.list failed")
                print("ok   right API key")
                rc, secs = keyed.stop()
                check(rc == 0, f"idle server: exit {rc} after SIGTERM ({secs:.1f} s)\n{keyed.log()}")
                check(secs < 5, f"idle server: took {secs:.1f} s to exit after SIGTERM")
                print(f"ok   SIGTERM when idle: exit 0 in {secs:.2f} s")
            # SIGTERM while a stream runs: the generation finishes (drained, not cut), then the
            # server exits 0 within a few seconds of the stream's end.
            stream = client.chat.completions.create(
                model=MODEL, messages=MESSAGES, stream=True, max_tokens=64, temperature=0, seed=7,
                extra_body={"diffusion": {"steps": 64}})
            it = iter(stream)
            first = next(it)
            check(first.choices, f"drain: first chunk has no choices: {first}")
            server.terminate()
            t_sig = time.monotonic()
            finish = None
            try:
                for chunk in it:
                    if chunk.choices and chunk.choices[0].finish_reason is not None:
                        finish = chunk.choices[0].finish_reason
            except openai.APIError as e:
                fail(f"drain: the running stream failed after SIGTERM: {type(e).__name__}: {e}\n{server.log()}")
            check(finish in ("stop", "length"), "drain: the running stream ended without a finish_reason after SIGTERM")
            drained = time.monotonic() - t_sig
            rc, secs = server.stop(timeout=drained + 5)
            check(rc is not None, f"no exit within 5 s of the drained stream's end ({secs:.1f} s after SIGTERM)\n{server.log()}")
            check(rc == 0, f"exit code {rc} after SIGTERM\n{server.log()}")
            print(f"ok   SIGTERM during a stream: the stream finished ({finish}) {drained:.2f} s after the signal, "
                  f"exit 0 {secs - drained:.2f} s later")
    except ServerError as e:
        fail(str(e))
    print(f"all checks passed in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
