//! The CLI's flags and the server's JSON fields are two spellings of one vocabulary: for every
//! architecture and every preset, cache and parallel rule, both must make the same
//! `GenerateRequest` (or both refuse it, blaming the same setting).

use clap::Parser;
use lacuna::models::Arch;
use lacuna::{GenerateRequest, Prompt};
use serde_json::{Map, Value, json};

use super::SamplingArgs;

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    sampling: SamplingArgs,
}

/// One setting: its `Settings` name and value (`None`: a switch).
type Setting = (&'static str, Option<&'static str>);

fn cli(arch: Arch, settings: &[Setting]) -> Result<GenerateRequest, String> {
    let mut args = vec!["lacuna".to_string()];
    for (name, value) in settings {
        args.push(super::flag_name(name));
        args.extend(value.map(str::to_string));
    }
    let flags = Flags::try_parse_from(&args).map_err(|e| e.to_string())?;
    flags
        .sampling
        .settings()
        .request(Prompt::Text("hi".into()), arch)
        .map_err(|e| e.message(&super::flag_name))
}

fn server(arch: Arch, settings: &[Setting]) -> Result<GenerateRequest, String> {
    let mut body = Map::new();
    body.insert("model".into(), json!("m"));
    body.insert("prompt".into(), json!("hi"));
    let mut diffusion = Map::new();
    for &(name, value) in settings {
        let v = match value {
            None => Value::Bool(true),
            Some(v) => serde_json::from_str(v).unwrap_or_else(|_| json!(v)),
        };
        match name {
            "gen_length" => body.insert("max_tokens".into(), v),
            "seed" | "temperature" | "top_p" | "top_k" | "logprobs" => body.insert(name.into(), v),
            _ => diffusion.insert(name.into(), v),
        };
    }
    body.insert("diffusion".into(), Value::Object(diffusion));
    let body = Value::Object(body).to_string();
    lacuna_server::generate_request(body.as_bytes(), false, arch)
        .map_err(|e| format!("{}: {}", e.param.unwrap_or_default(), e.message))
}

/// Every preset, cache policy and parallel rule, alone and combined.
const CASES: &[&[Setting]] = &[
    &[],
    &[("fast", None)],
    &[("cache", Some("none"))],
    &[("cache", Some("prefix"))],
    &[("cache", Some("dual"))],
    &[("fast", None), ("cache", Some("prefix"))],
    &[("parallel", None)],
    &[("parallel", None), ("threshold", Some("0.8"))],
    &[("parallel", None), ("factor", Some("1.5"))],
    &[("parallel", None), ("entropy_bound", Some("0.3"))],
    &[("fast", None), ("threshold", Some("0.7"))],
    &[("fast", None), ("factor", Some("2.0"))],
    &[("fast", None), ("entropy_bound", Some("0.5"))],
    &[
        ("cache", Some("dual")),
        ("parallel", None),
        ("factor", Some("1.0")),
    ],
    &[("threshold", Some("0.8"))],
    &[("factor", Some("1.0"))],
    &[("fast", None), ("cfg_scale", Some("1.0"))],
    &[("gen_length", Some("50"))],
    &[
        ("gen_length", Some("64")),
        ("steps", Some("8")),
        ("block_length", Some("16")),
    ],
    &[("gen_length", Some("96")), ("fast", None)],
    &[("steps", Some("0"))],
    &[("editing", None), ("max_post_steps", Some("4"))],
    &[("seed", Some("7")), ("temperature", Some("0.5"))],
    &[("logprobs", Some("5"))],
    &[("logprobs", Some("0")), ("fast", None)],
    &[("logprobs", Some("20")), ("temperature", Some("0.5"))],
    &[("logprobs", Some("21"))],
];

#[test]
fn the_cli_and_the_server_make_the_same_request() {
    let mut agreed = 0;
    for arch in Arch::ALL {
        for case in CASES {
            let mut settings = case.to_vec();
            // The server draws a fresh seed when none is given; the CLI's is 0.
            if !settings.iter().any(|(n, _)| *n == "seed") {
                settings.push(("seed", Some("0")));
            }
            match (cli(arch, &settings), server(arch, &settings)) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "{arch} {case:?}");
                    agreed += 1;
                }
                (Err(a), Err(b)) => {
                    // The same setting is blamed: `--cfg-scale` and `diffusion.cfg_scale`.
                    let blamed = |e: &str, spell: fn(&str) -> String| {
                        [
                            "threshold",
                            "factor",
                            "entropy_bound",
                            "cfg_scale",
                            "fast",
                            "steps",
                            "logprobs",
                        ]
                        .into_iter()
                        .filter(|n| e.contains(&spell(n)))
                        .collect::<Vec<_>>()
                    };
                    let on_cli = blamed(&a, super::flag_name);
                    assert!(!on_cli.is_empty(), "{arch} {case:?}: {a}");
                    // `logprobs` is a top-level field of the body; the rest are diffusion's.
                    let field = match on_cli[0] {
                        "logprobs" => "`logprobs`".to_string(),
                        other => format!("diffusion.{other}"),
                    };
                    assert!(
                        b.contains(&field),
                        "{arch} {case:?}: the CLI says {a:?}, the server {b:?}"
                    );
                }
                (a, b) => panic!("{arch} {case:?}: the CLI gives {a:?}, the server {b:?}"),
            }
        }
    }
    assert!(agreed >= 80, "only {agreed} requests compared");
}

#[test]
fn fast_on_llada2_is_its_exact_block_cache_on_both_doors() {
    let fast: &[Setting] = &[("fast", None), ("seed", Some("0"))];
    let a = cli(Arch::Llada2, fast).unwrap();
    assert_eq!(a, server(Arch::Llada2, fast).unwrap());
    assert_eq!(a.cache, lacuna::CachePolicy::Prefix);
}
