#!/usr/bin/env python3
"""Checks `lacuna serve` through LiteLLM (version pinned in requirements.txt), the SDK and
proxy many apps route their calls through, with its two providers for OpenAI-compatible
servers: `hosted_vllm/` and `openai/`, each given `api_base`. Chat, streamed chat (the
pieces join to the whole answer), async streaming, text completion, a tool call, Lacuna's
`diffusion` settings through `extra_body`, and an unknown model mapped to LiteLLM's
NotFoundError. Exits non-zero naming the first failed check.

Usage (repository root):
    python3 -m pip install -r tools/serve-check/requirements.txt
    python3 tools/serve-check/litellm_client.py target/debug/lacuna
"""
import asyncio, json, os, subprocess, sys, tempfile, time

# LiteLLM fetches its model price map from GitHub at import unless told to use its bundled
# copy; CI machines have no network beyond the package registries.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lacuna_server import LacunaServer, fail  # noqa: E402

try:
    import litellm
except ImportError:
    fail("the `litellm` package is missing: python3 -m pip install -r tools/serve-check/requirements.txt")

MODEL = "lacuna-demo"
MESSAGES = [{"role": "user", "content": "Who made the heaven and the earth?"}]
# Greedy with a seed, so streamed and whole answers must agree token for token.
SETTINGS = dict(max_tokens=64, temperature=0, seed=7, extra_body={"diffusion": {"steps": 8}})
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False}}}]
# The tool check runs on a random-weight tiny LLaDA fixture with a minimal chat template:
# the tool prompt outgrows the demo's 256-token context. Its arguments are noise that fits
# the schema, which is what is checked.
TEMPLATE = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}<assistant>"


def check(cond, msg):
    if not cond:
        fail(msg)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/debug/lacuna"
    from importlib.metadata import version
    print(f"litellm {version('litellm')}, openai {version('openai')}, {binary}")
    t0 = time.monotonic()
    with LacunaServer(binary, ["--demo"]) as s:
        base = f"{s.base_url}/v1"
        whole = None
        for provider in ["hosted_vllm", "openai"]:
            kw = dict(model=f"{provider}/{MODEL}", api_base=base, api_key="none")
            r = litellm.completion(messages=MESSAGES, **kw, **SETTINGS)
            text = r.choices[0].message.content
            check(isinstance(text, str) and text, f"{provider} chat: empty answer {r}")
            check(r.usage.completion_tokens == 64, f"{provider} chat: usage {r.usage}")
            check(r.choices[0].finish_reason == "length", f"{provider} chat: {r.choices[0]}")
            if whole is None:
                whole = text
            check(text == whole, f"{provider} chat: {text!r} differs from {whole!r}")
            print(f"ok   {provider} chat: {len(text)} chars, 64 tokens: {text[:50]!r}")

            pieces = [c.choices[0].delta.content or ""
                      for c in litellm.completion(messages=MESSAGES, stream=True, **kw,
                                                  **SETTINGS)]
            check("".join(pieces) == whole,
                  f"{provider} stream: {''.join(pieces)!r} differs from {whole!r}")
            print(f"ok   {provider} stream: {len(pieces)} chunks, equal to the whole answer")

        async def astream():
            out = []
            resp = await litellm.acompletion(model=f"hosted_vllm/{MODEL}", api_base=base,
                                             messages=MESSAGES, stream=True, **SETTINGS)
            async for c in resp:
                out.append(c.choices[0].delta.content or "")
            return "".join(out)
        got = asyncio.run(astream())
        check(got == whole, f"acompletion stream: {got!r} differs from {whole!r}")
        print("ok   acompletion stream: equal to the whole answer")

        r = litellm.text_completion(model=f"hosted_vllm/{MODEL}", api_base=base,
                                    prompt="In the beginning", max_tokens=32, temperature=0,
                                    seed=7)
        text = r.choices[0].text
        check(isinstance(text, str) and text, f"text_completion: {r}")
        print(f"ok   text_completion: {text[:50]!r}")

        try:
            litellm.completion(model="hosted_vllm/llama3.2", api_base=base,
                               messages=MESSAGES, max_tokens=8, num_retries=0)
            fail("unknown model: expected an error")
        except litellm.NotFoundError as e:
            check("llama3.2" in str(e), f"unknown model: {e}")
            print(f"ok   unknown model: NotFoundError ({str(e)[:90]}...)")
    with tempfile.TemporaryDirectory() as tmp:
        fixture = os.path.join(tmp, "tiny.gguf")
        subprocess.run([binary, "fixture", "--arch", "llada", "--chat-template", TEMPLATE,
                        "--out", fixture], check=True, capture_output=True)
        with LacunaServer(binary, ["--model", fixture, "--alias", "fixture",
                                   "--threads", "1"]) as t:
            r = litellm.completion(model="hosted_vllm/fixture", api_base=f"{t.base_url}/v1",
                                   messages=[{"role": "user", "content": "Weather in Paris?"}],
                                   tools=TOOLS, tool_choice="required", **SETTINGS)
            calls = r.choices[0].message.tool_calls or []
            check(len(calls) >= 1 and calls[0].function.name == "get_weather",
                  f"tool call: {r.choices[0].message}")
            args = json.loads(calls[0].function.arguments)
            check(set(args) == {"city"} and isinstance(args["city"], str),
                  f"tool call arguments do not fit the schema: {args}")
            check(r.choices[0].finish_reason == "tool_calls", f"tool call: {r.choices[0]}")
            print(f"ok   tool call: get_weather({calls[0].function.arguments[:40]}...)")
    print(f"all litellm checks passed in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
