#!/usr/bin/env python3
"""Checks structured outputs and tool calls of `lacuna serve` with the official OpenAI Python
client as applications call it: `response_format` json_schema (validated with `jsonschema`),
`chat.completions.parse` with a pydantic model, json_object, vLLM's `structured_outputs`
(regex, choice) through `extra_body`, and `tools` (forced, named, auto, streamed, a second
turn with the tool's result). JSON runs on the KJV demo model; tools, whose described tools
outgrow the demo's 256-token context, on a random-weight tiny LLaDA fixture with a chat
template. The models know no JSON: every answer fits because the canvas is constrained.
Exits non-zero naming the first failed check.

Usage (repository root):
    python3 -m pip install -r tools/serve-check/requirements.txt
    cargo build -p lacuna-cli
    python3 tools/serve-check/structured_client.py target/debug/lacuna
"""
import argparse, json, os, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lacuna_server import LacunaServer, ServerError, fail  # noqa: E402

try:
    import jsonschema
    import openai
    import pydantic
except ImportError as e:
    fail(f"{e.name} is missing: python3 -m pip install -r tools/serve-check/requirements.txt")

MESSAGES = [{"role": "user", "content": "And God said,"}]

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tribe": {"enum": ["Judah", "Levi", "Dan"]},
        "sons": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
    },
    "required": ["name", "age", "tribe", "sons"],
    "additionalProperties": False,
}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 16},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        }, "required": ["city", "unit"], "additionalProperties": False},
    }},
    {"type": "function", "function": {
        "name": "get_time", "description": "The time in a zone",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 8}},
                       "required": ["zone"], "additionalProperties": False},
    }},
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
TEMPLATE = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}<assistant>"


def check(cond, msg):
    if not cond:
        fail(msg)


class Person(pydantic.BaseModel):
    name: str
    age: int
    blessed: bool


def json_checks(client):
    model = "lacuna-demo"
    # 1. json_schema, several seeds at temperature 1: each answer valid under the schema.
    for seed in range(4):
        r = client.chat.completions.create(
            model=model, messages=MESSAGES, max_tokens=96, temperature=1.0, seed=seed,
            response_format={"type": "json_schema",
                             "json_schema": {"name": "person", "schema": PERSON, "strict": True}})
        text = r.choices[0].message.content
        try:
            jsonschema.validate(json.loads(text), PERSON)
        except (ValueError, jsonschema.ValidationError) as e:
            fail(f"json_schema (seed {seed}): {text!r} is not valid: {e}")
    print(f"ok   response_format json_schema: 4 answers valid, e.g. {text}")
    # 2. The client's own pydantic path (strict schema built by the client, parsed back).
    r = client.chat.completions.parse(model=model, messages=MESSAGES, max_tokens=64,
                                      response_format=Person)
    parsed = r.choices[0].message.parsed
    check(isinstance(parsed, Person), f"parse: no Person: {r}")
    print(f"ok   chat.completions.parse(response_format=Person): {parsed!r}")
    # 3. json_object: some JSON object.
    r = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=48,
                                       response_format={"type": "json_object"})
    text = r.choices[0].message.content
    check(isinstance(json.loads(text), dict), f"json_object: {text!r}")
    print(f"ok   response_format json_object: {text}")
    # 4. vLLM's structured_outputs through extra_body: a regex, a choice.
    r = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=16,
                                       extra_body={"structured_outputs": {"regex": "[0-9]{3}-[A-Z]{2}"}})
    text = r.choices[0].message.content
    import re
    check(re.fullmatch("[0-9]{3}-[A-Z]{2}", text), f"structured_outputs.regex: {text!r}")
    r = client.completions.create(model=model, prompt="And he answered,", max_tokens=8,
                                  extra_body={"structured_outputs": {"choice": ["yea", "nay"]}})
    check(r.choices[0].text in ("yea", "nay"), f"structured_outputs.choice: {r.choices[0].text!r}")
    print(f"ok   structured_outputs regex and choice: {text!r}, {r.choices[0].text!r}")
    # 5. A streamed json_schema answer: the chunks join to valid JSON.
    text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model=model, messages=MESSAGES, max_tokens=96, stream=True,
        response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}})
        if c.choices)
    jsonschema.validate(json.loads(text), PERSON)
    print("ok   streamed json_schema joins to a valid answer")
    # 6. Errors the client sees.
    try:
        client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=16,
                                       response_format={"type": "json_schema", "json_schema": {
                                           "name": "x", "schema": {"type": "object", "not": {}}}})
        fail("an unsupported schema keyword was accepted")
    except openai.BadRequestError as e:
        check(e.param == "response_format.json_schema.schema", f"unsupported keyword: param {e.param!r}")
        print(f"ok   unsupported keyword: 400 naming {e.param}: {e.message}")


def call_ok(call):
    check(call.type == "function" and call.id.startswith("call_"), f"tool call: {call}")
    schema = SCHEMAS.get(call.function.name)
    check(schema is not None, f"tool call: {call.function.name!r} is not a tool")
    try:
        jsonschema.validate(json.loads(call.function.arguments), schema)
    except (ValueError, jsonschema.ValidationError) as e:
        fail(f"tool call arguments {call.function.arguments!r}: {e}")


def tool_checks(client):
    model = "fixture"
    fast = dict(max_tokens=128, extra_body={"diffusion": {"steps": 32, "block_length": 32}})
    r = client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS,
                                       tool_choice="required", **fast)
    c = r.choices[0]
    check(c.finish_reason == "tool_calls", f"required: finish_reason {c.finish_reason!r}")
    check(c.message.tool_calls, f"required: no tool calls: {r}")
    for call in c.message.tool_calls:
        call_ok(call)
    first = c.message.tool_calls[0]
    print(f"ok   tool_choice required: {[(t.function.name, t.function.arguments) for t in c.message.tool_calls]}")
    r = client.chat.completions.create(
        model=model, messages=MESSAGES, tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_time"}}, **fast)
    calls = r.choices[0].message.tool_calls
    check(calls and len(calls) == 1 and calls[0].function.name == "get_time", f"named: {r}")
    call_ok(calls[0])
    print("ok   tool_choice named function: one get_time call")
    for seed in range(3):
        r = client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS, seed=seed,
                                           temperature=1.0, **fast)
        m = r.choices[0].message
        if m.tool_calls:
            for call in m.tool_calls:
                call_ok(call)
        else:
            check(isinstance(m.content, str), f"auto: neither calls nor text: {r}")
    print("ok   tool_choice auto: calls or text, each well-formed")
    # Streamed: the calls arrive as tool_calls deltas the client accumulates.
    calls = {}
    finish = None
    for chunk in client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS,
                                                tool_choice="required", stream=True, **fast):
        for ch in chunk.choices:
            for d in ch.delta.tool_calls or []:
                e = calls.setdefault(d.index, {"name": "", "arguments": ""})
                e["name"] += d.function.name or ""
                e["arguments"] += d.function.arguments or ""
            finish = ch.finish_reason or finish
    check(finish == "tool_calls" and calls, f"streamed: finish {finish!r}, calls {calls}")
    for e in calls.values():
        jsonschema.validate(json.loads(e["arguments"]), SCHEMAS[e["name"]])
    print(f"ok   streamed tool calls: {len(calls)} accumulated, finish_reason tool_calls")
    # A second turn: the call and its result go back; the server reads both.
    turn = MESSAGES + [
        {"role": "assistant", "content": None, "tool_calls": [first.model_dump()]},
        {"role": "tool", "tool_call_id": first.id, "content": json.dumps({"result": 31})},
    ]
    r = client.chat.completions.create(model=model, messages=turn, tools=TOOLS, **fast)
    check(r.choices[0].message.tool_calls or isinstance(r.choices[0].message.content, str),
          f"second turn: {r}")
    print("ok   a second turn with the tool's result")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", help="the lacuna binary, e.g. target/debug/lacuna")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per request")
    a = ap.parse_args()
    t0 = time.monotonic()
    print(f"openai {openai.__version__}, pydantic {pydantic.__version__}, {a.binary}")
    with tempfile.TemporaryDirectory() as tmp:
        fixture = os.path.join(tmp, "tiny.gguf")
        subprocess.run([a.binary, "fixture", "--arch", "llada", "--chat-template", TEMPLATE,
                        "--out", fixture], check=True)
        try:
            for args, checks in ((["--demo"], json_checks),
                                 (["--model", fixture, "--alias", "fixture", "--threads", "1"], tool_checks)):
                with LacunaServer(a.binary, args) as server:
                    client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="unused",
                                           timeout=a.timeout, max_retries=0)
                    try:
                        checks(client)
                    except openai.APIError as e:
                        fail(f"unexpected {type(e).__name__}: {e}\nserver log:\n{server.log()}")
        except ServerError as e:
            fail(str(e))
    print(f"all structured-output checks passed in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
