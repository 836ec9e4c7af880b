#!/usr/bin/env python3
"""Checks Ollama's API on `lacuna serve` with the official `ollama` Python client (version
pinned in requirements.txt), as applications call it: chat and generate, each streamed and
whole (the streamed pieces join to the same answer), raw prompts and a suffix, log-probabilities,
list, show, ps, the version, a bad model name (ResponseError 404), an option a diffusion
sampler cannot honour (400), `format` with a pydantic model's JSON schema (validated by
pydantic), the async client, the API key, and tools (a Python function, its call's arguments an
object, then a second turn with its result) on a random-weight tiny LLaDA fixture with a chat
template, since the tools' description outgrows the demo's 256-token context; that model never
chooses to call, so the calls are asked for with Lacuna's `tool_choice` extension. Exits non-zero
naming the first failed check.

Usage (repository root):
    python3 -m pip install -r tools/serve-check/requirements.txt
    cargo build -p lacuna-cli
    python3 tools/serve-check/ollama_client.py target/debug/lacuna
"""
import argparse, asyncio, json, os, subprocess, sys, tempfile, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lacuna_server import LacunaServer, ServerError, fail  # noqa: E402

try:
    import ollama
    import pydantic
except ImportError as e:
    fail(f"{e.name} is missing: python3 -m pip install -r tools/serve-check/requirements.txt")

MODEL = "lacuna-demo"
MESSAGES = [{"role": "user", "content": "Who made the heaven and the earth?"}]
# Fixed, quick settings: greedy with a seed, so streamed and whole answers must agree.
OPTIONS = {"num_predict": 64, "temperature": 0, "seed": 7, "diffusion": {"steps": 8}}
TEMPLATE = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}<assistant>"


def check(cond, msg):
    if not cond:
        fail(msg)


def expect_error(status, what, call):
    try:
        r = call()
        if hasattr(r, "__next__"):  # a stream fails when read
            list(r)
    except ollama.ResponseError as e:
        check(e.status_code == status, f"{what}: status {e.status_code}, want {status}: {e.error}")
        check(isinstance(e.error, str) and e.error, f"{what}: error {e.error!r} is not a message")
        print(f"ok   {what}: ResponseError {e.status_code}: {e.error}")
        return e
    fail(f"{what}: expected ResponseError {status}, the call succeeded")


def done_ok(r, what):
    check(r.done is True, f"{what}: done {r.done!r}")
    check(r.done_reason in ("stop", "length"), f"{what}: done_reason {r.done_reason!r}")
    check(r.model in (MODEL, MODEL + ":latest"), f"{what}: model {r.model!r}")
    check(isinstance(r.created_at, str) and r.created_at.endswith("Z"), f"{what}: created_at {r.created_at!r}")
    check(r.prompt_eval_count and r.prompt_eval_count > 0, f"{what}: prompt_eval_count {r.prompt_eval_count}")
    check(r.eval_count and r.eval_count > 0, f"{what}: eval_count {r.eval_count}")
    check(r.eval_duration and r.total_duration >= r.eval_duration,
          f"{what}: durations total {r.total_duration} eval {r.eval_duration}")


class Person(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=12)
    age: int = pydantic.Field(ge=0, le=150)
    blessed: bool


def main_checks(client, base_url):
    # 1. Chat, whole.
    r = client.chat(model=MODEL, messages=MESSAGES, options=OPTIONS)
    answer = r.message.content
    check(r.message.role == "assistant", f"chat: role {r.message.role!r}")
    check(isinstance(answer, str) and answer.strip(), f"chat: empty content: {r}")
    done_ok(r, "chat")
    print(f"ok   chat: {len(answer)} chars, {r.eval_count} tokens in {r.eval_duration / 1e6:.0f} ms, "
          f"done_reason {r.done_reason}: {answer[:60]!r}")

    # 2. Chat, streamed: several pieces that join to the same answer, the last one done.
    parts = list(client.chat(model=MODEL, messages=MESSAGES, options=OPTIONS, stream=True))
    pieces = [p.message.content for p in parts[:-1]]
    check(len(pieces) >= 2, f"chat stream: only {len(pieces)} piece(s)")
    check(all(p.done is False for p in parts[:-1]), "chat stream: a piece before the last is done")
    done_ok(parts[-1], "chat stream")
    check("".join(pieces) == answer, f"chat stream: the pieces differ from the whole answer:\n"
                                     f"  streamed: {''.join(pieces)!r}\n  answer:   {answer!r}")
    check(parts[-1].eval_count == r.eval_count, "chat stream: eval_count differs")
    print(f"ok   chat stream: {len(pieces)} pieces, equal to the whole answer")

    # 3. Generate: whole, streamed, raw, and with a suffix.
    g = client.generate(model=MODEL, prompt="In the beginning God created", options=OPTIONS)
    done_ok(g, "generate")
    check(g.response.strip(), f"generate: empty response: {g}")
    streamed = "".join(p.response for p in client.generate(
        model=MODEL, prompt="In the beginning God created", options=OPTIONS, stream=True))
    check(streamed == g.response, f"generate stream: {streamed!r} != {g.response!r}")
    raw = client.generate(model=MODEL + ":latest", prompt="And God said,", raw=True, options=OPTIONS)
    check(raw.response.strip() and raw.model == MODEL + ":latest", f"generate raw: {raw}")
    fill = client.generate(model=MODEL, prompt="And God said,", suffix=" and there was light.",
                           options={"num_predict": 16, "seed": 1, "diffusion": {"steps": 16, "block_length": 16}})
    done_ok(fill, "generate suffix")
    print(f"ok   generate: {g.response[:50]!r}; streamed equal; raw {raw.response[:30]!r}; "
          f"suffix middle {fill.response!r}")

    # 4. Log-probabilities: one entry per answer token.
    r = client.chat(model=MODEL, messages=MESSAGES, options=OPTIONS, logprobs=True, top_logprobs=2)
    check(r.logprobs and len(r.logprobs) == r.eval_count, f"logprobs: {len(r.logprobs or [])} for {r.eval_count} tokens")
    check(all(lp.logprob <= 0 and len(lp.top_logprobs) == 2 for lp in r.logprobs), f"logprobs: {r.logprobs[:2]}")
    print(f"ok   logprobs: {len(r.logprobs)} tokens, first {r.logprobs[0].token!r} {r.logprobs[0].logprob:.3f}")

    # 5. format: a pydantic model's JSON schema; every answer validates.
    for seed in range(3):
        r = client.chat(model=MODEL, messages=MESSAGES, format=Person.model_json_schema(),
                        options={"num_predict": 64, "temperature": 1.0, "seed": seed})
        try:
            p = Person.model_validate_json(r.message.content)
        except pydantic.ValidationError as e:
            fail(f"format (seed {seed}): {r.message.content!r} is not a Person: {e}")
    r = client.generate(model=MODEL, prompt="And God said,", format="json", options={"num_predict": 48})
    check(isinstance(json.loads(r.response), dict), f"format json: {r.response!r}")
    print(f"ok   format: 3 answers valid Persons, e.g. {p!r}; format json: {r.response}")

    # 6. list, show, ps, version.
    models = client.list().models
    check(len(models) == 1 and models[0].model == MODEL + ":latest", f"list: {models}")
    m = models[0]
    check(m.details.format == "gguf" and m.details.family == "llada", f"list: details {m.details}")
    check(m.size and m.size > 0 and m.digest and m.modified_at, f"list: {m}")
    s = client.show(MODEL)
    check(s.modelinfo["general.architecture"] == "llada", f"show: model_info {s.modelinfo}")
    check("completion" in s.capabilities, f"show: capabilities {s.capabilities}")
    check(s.details.parameter_size == m.details.parameter_size, f"show: details {s.details}")
    ps = client.ps().models
    check(len(ps) == 1 and ps[0].model == MODEL + ":latest" and ps[0].context_length == 256, f"ps: {ps}")
    with urllib.request.urlopen(base_url + "/api/version", timeout=10) as v:
        version = json.load(v)["version"]
    check(all(x.isdigit() for x in version.split(".")) and version.count(".") == 2, f"version: {version!r}")
    print(f"ok   list {m.model} ({m.details.parameter_size}, {m.details.quantization_level}), show "
          f"{s.capabilities}, ps context {ps[0].context_length}, version {version}")

    # 7. Errors.
    expect_error(404, "unknown model", lambda: client.chat(model="llama3.2", messages=MESSAGES))
    expect_error(404, "unknown model, streamed", lambda: client.generate(model="llama3.2", prompt="x", stream=True))
    expect_error(404, "show of an unknown model", lambda: client.show("llama3.2"))
    expect_error(400, "an autoregressive option", lambda: client.chat(
        model=MODEL, messages=MESSAGES, options={"repeat_penalty": 1.3}))
    expect_error(400, "think", lambda: client.chat(model=MODEL, messages=MESSAGES, think=True))
    expect_error(400, "context", lambda: client.generate(model=MODEL, prompt="x", context=[1, 2]))
    expect_error(400, "embeddings", lambda: client.embed(model=MODEL, input="x"))
    expect_error(404, "pull", lambda: client.pull("llama3.2"))

    # 8. The async client, streamed.
    async def astream():
        c = ollama.AsyncClient(host=base_url)
        return [p async for p in await c.chat(model=MODEL, messages=MESSAGES, options=OPTIONS, stream=True)]
    parts = asyncio.run(astream())
    check("".join(p.message.content for p in parts) == answer, "async chat stream: differs from the answer")
    print(f"ok   AsyncClient stream: {len(parts)} parts, equal to the answer")


def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
      city: The city's name

    Returns:
      str: The weather
    """
    return f"11 degrees in {city}"


def required(client, stream=False, **kw):
    """`client.chat(..., stream=stream, **kw)` with Lacuna's `tool_choice: "required"` added:
    the body the client serializes and the response class it parses into, through its own
    request method (Ollama's API, and so the client, has no `tool_choice`)."""
    from ollama._client import _copy_messages, _copy_tools
    from ollama._types import ChatRequest
    body = ChatRequest(model="fixture", stream=stream, tools=list(_copy_tools(kw.pop("tools"))),
                       messages=list(_copy_messages(kw.pop("messages"))),
                       **kw).model_dump(exclude_none=True)
    body["tool_choice"] = "required"
    return client._request(ollama.ChatResponse, "POST", "/api/chat", json=body, stream=stream)


def tool_checks(client):
    options = {"num_predict": 128, "seed": 3, "diffusion": {"steps": 32, "block_length": 32}}
    messages = [{"role": "user", "content": "What is the weather in Tokyo?"}]
    # The model chooses a call or a text reply (this random one writes text).
    r = client.chat(model="fixture", messages=messages, tools=[get_weather], options=options)
    check(r.done and (r.message.tool_calls or isinstance(r.message.content, str)), f"tools auto: {r}")
    r = required(client, messages=messages, tools=[get_weather], options=options)
    calls = r.message.tool_calls
    check(calls, f"tools required: no calls: {r}")
    for c in calls:
        check(c.function.name == "get_weather", f"tools: call {c}")
        check(isinstance(c.function.arguments, dict) and isinstance(c.function.arguments.get("city"), str),
              f"tools: arguments {c.function.arguments!r} are not an object with a city")
    check(r.done is True and r.eval_count > 0, f"tools: {r}")
    print(f"ok   tools: {[(c.function.name, c.function.arguments) for c in calls]}")
    # Streamed: the calls arrive whole in a piece before the last.
    parts = list(required(client, stream=True, messages=messages, tools=[get_weather], options=options))
    streamed = [c.function for p in parts for c in (p.message.tool_calls or [])]
    check(streamed == [c.function for c in calls], f"tools stream: {streamed} != {calls}")
    check(parts[-1].done and not parts[-1].message.tool_calls, f"tools stream: last part {parts[-1]}")
    # A second turn: the call and its result go back as the client writes them.
    messages.append(r.message)
    for c in calls:
        messages.append({"role": "tool", "content": get_weather(**c.function.arguments),
                         "tool_name": c.function.name})
    r = client.chat(model="fixture", messages=messages, tools=[get_weather], options=options)
    check(r.done and (r.message.tool_calls or isinstance(r.message.content, str)), f"second turn: {r}")
    print("ok   tools: streamed calls, and a second turn with the tool's result")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", help="the lacuna binary, e.g. target/debug/lacuna")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per request")
    a = ap.parse_args()
    t0 = time.monotonic()
    version = getattr(ollama, "__version__", None)
    if version is None:
        from importlib.metadata import version as v
        version = v("ollama")
    print(f"ollama {version}, pydantic {pydantic.__version__}, {a.binary}")
    try:
        with LacunaServer(a.binary, ["--demo"]) as server:
            client = ollama.Client(host=server.base_url, timeout=a.timeout)
            main_checks(client, server.base_url)
        with LacunaServer(a.binary, ["--demo", "--api-key", "k"]) as keyed:
            wrong = ollama.Client(host=keyed.base_url, timeout=a.timeout, headers={"Authorization": "Bearer no"})
            expect_error(401, "wrong API key", lambda: wrong.list())
            right = ollama.Client(host=keyed.base_url, timeout=a.timeout, headers={"Authorization": "Bearer k"})
            check(right.list().models[0].model == MODEL + ":latest", "right API key: list failed")
            print("ok   right API key")
        with tempfile.TemporaryDirectory() as tmp:
            fixture = os.path.join(tmp, "tiny.gguf")
            subprocess.run([a.binary, "fixture", "--arch", "llada", "--chat-template", TEMPLATE,
                            "--out", fixture], check=True)
            with LacunaServer(a.binary, ["--model", fixture, "--alias", "fixture", "--threads", "1"]) as server:
                tool_checks(ollama.Client(host=server.base_url, timeout=a.timeout))
    except ServerError as e:
        fail(str(e))
    except ollama.ResponseError as e:
        fail(f"unexpected ResponseError {e.status_code}: {e.error}")
    print(f"all ollama client checks passed in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
