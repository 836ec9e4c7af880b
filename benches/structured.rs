//! What a structured-output constraint costs: compiling it for a vocabulary of a real
//! model's size (LLaDA-8B's 126,464 tokens, DiffusionGemma's 262,144), the automaton's
//! size, and the time it adds to each denoising step (gen 128, blocks of 32, dual cache).
//!
//! The models are random-weight fixtures at `d = 256` with the full vocabulary (their token
//! strings are the 256 bytes plus fillers `<|tN|>`, not a trained BPE): the compile and
//! per-step costs depend on the vocabulary and the canvas, not on the layers, so the
//! figures carry over to the real models; the step times themselves do not.
//!
//! ```text
//! cargo bench -p lacuna-benches --bench structured
//! ```

use std::time::Instant;

use lacuna::gguf::GgufFile;
use lacuna::models::Arch;
use lacuna::models::fixture::{self, FixtureSpec, QuantMix, Shape};
use lacuna::structured::Spec;
use lacuna::tools::{Tool, ToolChoice, ToolUse};
use lacuna::{CachePolicy, Engine, EngineOptions, Prompt, Settings};
use serde_json::{Value, json};

fn engine(arch: Arch, n_vocab: usize) -> Engine {
    let mut spec = FixtureSpec::new(arch, Shape::Tiny, 1, QuantMix::F32);
    spec.dims.n_vocab = n_vocab;
    let bytes = fixture::build(&spec).unwrap().to_vec().unwrap();
    let options = EngineOptions {
        threads: Some(2),
        ..Default::default()
    };
    Engine::from_gguf(GgufFile::from_vec(bytes).unwrap(), &options).unwrap()
}

/// Four objects of five properties each: strings with bounds, an integer range, an enum, a
/// boolean, an array of strings.
fn nested20() -> Value {
    let part = |p: &str| {
        json!({
            "type": "object",
            "properties": {
                format!("{p}_name"): {"type": "string", "maxLength": 24},
                format!("{p}_count"): {"type": "integer", "minimum": 0, "maximum": 10000},
                format!("{p}_kind"): {"enum": ["alpha", "beta", "gamma", "delta"]},
                format!("{p}_ok"): {"type": "boolean"},
                format!("{p}_tags"): {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4},
            },
            "required": [format!("{p}_name"), format!("{p}_count"), format!("{p}_kind"), format!("{p}_ok"), format!("{p}_tags")],
            "additionalProperties": false,
        })
    };
    json!({
        "type": "object",
        "properties": {"a": part("a"), "b": part("b"), "c": part("c"), "d": part("d")},
        "required": ["a", "b", "c", "d"],
        "additionalProperties": false,
    })
}

fn person() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 32},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "email": {"type": "string", "format": "email"},
        },
        "required": ["name", "age", "email"],
        "additionalProperties": false,
    })
}

fn tools() -> Spec {
    let tool = |name: &str, params: Value| Tool {
        name: name.into(),
        description: None,
        parameters: Some(params),
    };
    let t = vec![
        tool(
            "get_weather",
            json!({"type": "object", "properties": {"city": {"type": "string", "maxLength": 32}, "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"]}),
        ),
        tool(
            "search",
            json!({"type": "object", "properties": {"query": {"type": "string", "maxLength": 64}, "limit": {"type": "integer", "minimum": 1, "maximum": 50}}, "required": ["query"]}),
        ),
        tool("now", json!({"type": "object", "properties": {}})),
    ];
    ToolUse::new(t, ToolChoice::Auto, true)
        .unwrap()
        .constraint()
        .unwrap()
}

fn settings(n: usize, constraint: Option<Spec>) -> Settings {
    Settings {
        gen_length: Some(n),
        steps: Some(n),
        block_length: Some(32),
        cache: Some(CachePolicy::Dual),
        seed: Some(1),
        constraint,
        ..Settings::default()
    }
}

/// The least of `k` runs' figures (the one least disturbed by the machine).
fn best_of(k: usize, mut f: impl FnMut() -> f64) -> f64 {
    (0..k).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn main() {
    let specs: Vec<(&str, Spec)> = vec![
        ("json_object", Spec::JsonObject),
        ("person (3 properties, email)", Spec::JsonSchema(person())),
        ("nested, 20 properties", Spec::JsonSchema(nested20())),
        ("3 tools, auto", tools()),
        (
            "regex [0-9]{3}-[A-Z]{2}",
            Spec::Regex("[0-9]{3}-[A-Z]{2}".into()),
        ),
    ];
    println!(
        "| vocab | constraint | compile ms | cached ms | states | classes | MiB | gen | \
         step ms (none) | step ms (constrained) | added ms/step |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (arch, n_vocab, label) in [
        (Arch::Llada, 126_464, "126,464 (LLaDA-8B size)"),
        (Arch::Llada, 262_144, "262,144 (Gemma size)"),
    ] {
        let mut e = engine(arch, n_vocab);
        let prompt = Prompt::Text("The answer:".into());
        // The unconstrained step time at each generation length (after a warm-up run).
        let mut bases: Vec<(usize, f64)> = Vec::new();
        for (name, spec) in &specs {
            let t0 = Instant::now();
            let c = e.constraint(spec).unwrap();
            let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
            let t1 = Instant::now();
            e.constraint(spec).unwrap();
            let cached_ms = t1.elapsed().as_secs_f64() * 1e3;
            // 128 tokens, or room for the shortest answer (this vocabulary spells most text
            // a byte a token) and 32 more.
            let n = 128.max((c.min_tokens() + 32).div_ceil(32) * 32);
            let base = match bases.iter().find(|(g, _)| *g == n) {
                Some(&(_, b)) => b,
                None => {
                    let plain = settings(n, None).request(prompt.clone(), arch).unwrap();
                    e.generate(&plain, |_| {}).unwrap();
                    let b = best_of(3, || {
                        e.generate(&plain, |_| {}).unwrap().timings.step_ms_median()
                    });
                    bases.push((n, b));
                    b
                }
            };
            let r = settings(n, Some(spec.clone()))
                .request(prompt.clone(), arch)
                .unwrap();
            let p = e.prepare(&r).unwrap();
            e.generate_prepared(&p, |_| {}).unwrap();
            let step = best_of(3, || {
                e.generate_prepared(&p, |_| {})
                    .unwrap()
                    .timings
                    .step_ms_median()
            });
            println!(
                "| {label} | {name} | {compile_ms:.0} | {cached_ms:.3} | {} | {} | {:.1} | {n} | \
                 {base:.2} | {step:.2} | {:.2} |",
                c.states(),
                c.classes(),
                c.bytes() as f64 / (1 << 20) as f64,
                step - base,
            );
        }
    }
}
