use super::*;
use crate::render::{Loaded, rows};
use crate::serve::ServeLoaded;

/// A run result; `f` edits its JSON before parsing.
fn run(path: &str, engine: &str, median: f64, f: impl FnOnce(&mut serde_json::Value)) -> Loaded {
    let mut v = serde_json::json!({
        "schema": "lacuna.bench.v1",
        "engine": {"name": engine, "version": "0.1.0", "build": "amx"},
        "repo_commit": "c3a643f",
        "date": "2026-11-30T06:00:00Z",
        "machine": {"id": "box", "cpu_model": "Test CPU", "cores": 2, "threads": 2,
                    "simd": ["avx2", "avx512vnni", "amx-int8"], "ram_bytes": 1u64 << 34, "gpu": null},
        "model": {"id": "llada-q4km", "architecture": "llada", "layers": 4,
                  "d_model": 4096, "heads": 32, "kv_heads": 32, "ffn": 12288, "vocab": 126464,
                  "quant": "Q4_K_M-like", "file_bytes": 1u64 << 30, "synthetic": true},
        "workload": {"kind": "forward", "prompt_tokens": 160, "gen_tokens": 0,
                     "steps": null, "block_length": null, "sampler": null},
        "figures": {"runs": 5, "step_ms": {"median": median, "min": median, "max": median},
                    "forward_tokens_per_s": 1.0, "generated_tokens_per_s": null,
                    "startup_s": null, "peak_rss_bytes": null}
    });
    f(&mut v);
    Loaded {
        path: format!("bench-results/box/{path}.json"),
        result: crate::schema::parse(&v.to_string()).unwrap(),
    }
}

/// `{name}-lacuna` and `{name}-llama`: the two engines on one model and workload, both
/// edited by `f`.
fn pair(name: &str, lacuna: f64, llama: f64, f: impl Fn(&mut serde_json::Value)) -> [Loaded; 2] {
    [
        run(&format!("{name}-lacuna"), "lacuna", lacuna, &f),
        run(&format!("{name}-llama"), "llama.cpp", llama, &f),
    ]
}

fn model(id: &str, arch: &str, quant: &str) -> impl Fn(&mut serde_json::Value) {
    let (id, arch, quant) = (id.to_string(), arch.to_string(), quant.to_string());
    move |v| {
        v["model"]["id"] = id.as_str().into();
        v["model"]["architecture"] = arch.as_str().into();
        v["model"]["quant"] = quant.as_str().into();
    }
}

fn generate(cache: &'static str) -> impl Fn(&mut serde_json::Value) {
    move |v| {
        v["workload"] = serde_json::json!({"kind": "generate", "prompt_tokens": 32,
            "gen_tokens": 128, "steps": 128, "block_length": 32, "sampler": "llada",
            "cache": cache});
        v["figures"]["generated_tokens_per_s"] = 1.0.into();
    }
}

fn build(b: &'static str) -> impl Fn(&mut serde_json::Value) {
    move |v| v["engine"]["build"] = b.into()
}

fn picked(picks: &[Pick], family: Family) -> (String, f64, Vec<f64>) {
    let p = picks.iter().find(|p| p.family == family).unwrap();
    (
        p.row.model().id.clone(),
        p.row.speedup().unwrap(),
        p.speedups.clone(),
    )
}

#[test]
fn each_family_picks_its_largest_speed_up_and_spreads_all_of_them() {
    let pairs = [
        // Dense forward at two lengths: 2.0× and 3.0× (the pick).
        pair("a", 500.0, 1000.0, |_| {}),
        pair("b", 300.0, 900.0, |v| {
            v["workload"]["prompt_tokens"] = 64.into()
        }),
        // Presets: 0.9× and 4.0×; they do not count as dense forward rows.
        pair(
            "p1",
            1000.0,
            900.0,
            model("q4_0", "llada", "Q4_0 (llama-quantize type mix)"),
        ),
        pair(
            "p2",
            100.0,
            400.0,
            model("q5_1", "llada", "Q5_1 (llama-quantize type mix)"),
        ),
        // MoE: 1.5×.
        pair("m", 200.0, 300.0, model("rnd1", "rnd1", "Q4_K_M-like")),
    ];
    let mut results: Vec<Loaded> = pairs.into_iter().flatten().collect();
    results.extend([
        // A loss at AMX off.
        run("c-lacuna", "lacuna", 1000.0, build("cpu-avx512vnni")),
        run("c-llama", "llama.cpp", 800.0, build("avx512-no-amx")),
        // Generate: none 2.5×, dual 10× against llama.cpp's uncached run, prefix not headlined.
        run("g-none", "lacuna", 400.0, generate("none")),
        run("g-dual", "lacuna", 100.0, generate("dual")),
        run("g-prefix", "lacuna", 200.0, generate("prefix")),
        run("g-llama", "llama.cpp", 1000.0, generate("none")),
        // No llama.cpp run: not in any pick.
        run("lonely", "lacuna", 1.0, model("dream", "dream", "Q8_0")),
    ]);
    let rows = rows(&results);
    let picks = select(&rows);
    let families: Vec<Family> = picks.iter().map(|p| p.family).collect();
    assert_eq!(
        families,
        [
            Family::Forward,
            Family::ForwardAmxOff,
            Family::GenerateNone,
            Family::GenerateDual,
            Family::Presets,
            Family::Moe
        ]
    );
    let (_, s, all) = picked(&picks, Family::Forward);
    assert_eq!((s, all), (3.0, vec![2.0, 3.0]));
    assert_eq!(picked(&picks, Family::ForwardAmxOff).1, 0.8);
    let (id, s, all) = picked(&picks, Family::Presets);
    assert_eq!((id.as_str(), s, all), ("q5_1", 4.0, vec![0.9, 4.0]));
    assert_eq!(picked(&picks, Family::Moe).0, "rnd1");
    assert_eq!(picked(&picks, Family::GenerateNone).1, 2.5);
    assert_eq!(picked(&picks, Family::GenerateDual).1, 10.0);

    let text = render_detail(&rows, &[]);
    assert!(
        text.starts_with(
            "Machine `box`: Test CPU, 2 cores, 16 GiB; a row with no instruction set named runs its best (AMX).\n"
        ),
        "{text}"
    );
    // Links are relative to bench-results/README.md, where the detail is.
    assert!(
        text.contains("| forward pass | `llada-q4km`, T=64 | 300.0 ms/step | llama.cpp 900.0 ms/step | 3.00× | 2 rows: 2.00×–3.00×, median 2.50× | [Lacuna](box/b-lacuna.json) [llama.cpp](box/b-llama.json) |"),
        "{text}"
    );
    // The losing family is shown, and the cached row names its uncached baseline.
    assert!(text.contains("| 0.80× | 1 row |"), "{text}");
    assert!(
        text.contains("| generate, dual cache (approximate) | `llada-q4km`, prompt 32 + gen 128, 128 steps | 100.0 ms/step | llama.cpp, no cache 1000.0 ms/step | 10.00× |"),
        "{text}"
    );
    assert!(text.contains("Every model compared with llama.cpp above has random weights"));
    assert!(text.lines().count() <= 14, "{text}");

    // The README's form: the same figures in short cells, no files.
    let text = render(&rows, &[]);
    assert!(
        text.contains("| forward pass | `llada-q4km`, T=64 | 300.0 ms/step | llama.cpp 900.0 ms/step | 3.00× | 2 rows: 2.00×–3.00×, median 2.50× |\n"),
        "{text}"
    );
    assert!(
        text.contains("| generate, dual cache (approximate) | `llada-q4km`, gen 128 | 100.0 ms/step | llama.cpp, no cache 1000.0 ms/step | 10.00× |"),
        "{text}"
    );
    assert!(
        text.contains("Random weights in real models' shapes"),
        "{text}"
    );
    assert!(!text.contains(".json"), "{text}");
    assert!(text.lines().count() <= 14, "{text}");
}

/// The longest cell of the README's form, in characters.
fn widest_cell(text: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with('|'))
        .flat_map(|l| l.split('|'))
        .map(|c| c.trim().chars().count())
        .max()
        .unwrap_or(0)
}

#[test]
fn the_readme_form_keeps_every_cell_short() {
    // Long names, two machines (so each row names its machine), a serve row.
    let long = |v: &mut serde_json::Value| {
        model("llada-8b-shape-32l-q4km", "llada", "Q4_K_M-like")(v);
        generate("dual")(v);
        v["workload"]["prompt_tokens"] = 544.into();
        v["workload"]["gen_tokens"] = 1024.into();
        v["workload"]["steps"] = 1024.into();
    };
    let mut results: Vec<Loaded> = pair("g", 100.0, 1000.0, long).into();
    results.extend(pair("d", 100.0, 1000.0, |v| {
        long(v);
        v["workload"]["cache"] = "none".into();
        v["machine"]["id"] = "epyc-2c-avx512-quiet".into();
    }));
    let rows = rows(&results);
    let serve = [
        serve_run("c1", "llada8b-shape-32l-q4km", 1, 4.0),
        serve_run("c8", "llada8b-shape-32l-q4km", 8, 9.0),
    ];
    let short = render(&rows, &serve);
    assert!(
        short.contains("| `llada-8b-shape-32l-q4km`, gen 1024 | `epyc-2c-avx512-quiet` |"),
        "{short}"
    );
    assert!(widest_cell(&short) <= 60, "{short}");
    // The detail keeps the whole workload (and is wider).
    let detail = render_detail(&rows, &serve);
    assert!(
        detail.contains("prompt 544 + gen 1024, 1024 steps"),
        "{detail}"
    );
    assert!(widest_cell(&detail) > 60, "{detail}");
}

#[test]
fn ties_keep_the_first_row_and_even_counts_take_the_middle_mean() {
    let results = vec![
        run("a-lacuna", "lacuna", 100.0, |_| {}),
        run("a-llama", "llama.cpp", 200.0, |_| {}),
        run("b-lacuna", "lacuna", 100.0, |v| {
            v["workload"]["prompt_tokens"] = 64.into()
        }),
        run("b-llama", "llama.cpp", 200.0, |v| {
            v["workload"]["prompt_tokens"] = 64.into()
        }),
        run("c-lacuna", "lacuna", 100.0, |v| {
            v["workload"]["prompt_tokens"] = 544.into()
        }),
        run("c-llama", "llama.cpp", 100.0, |v| {
            v["workload"]["prompt_tokens"] = 544.into()
        }),
    ];
    let rows = rows(&results);
    let picks = select(&rows);
    assert_eq!(picks.len(), 1);
    // Rows sort by label: "T=160" < "T=544" < "T=64"; the first 2.0× row wins.
    assert_eq!(picks[0].row.workload, "forward, T=160");
    assert_eq!(
        spread(&picks[0].speedups),
        "3 rows: 1.00×–2.00×, median 2.00×"
    );
    assert_eq!(
        spread(&[1.0, 2.0, 3.0, 5.0]),
        "4 rows: 1.00×–5.00×, median 2.50×"
    );
}

#[test]
fn a_real_model_among_random_ones_is_marked() {
    let real = |v: &mut serde_json::Value| v["model"]["synthetic"] = false.into();
    let results = vec![
        run("a-lacuna", "lacuna", 100.0, real),
        run("a-llama", "llama.cpp", 200.0, real),
        run(
            "m-lacuna",
            "lacuna",
            200.0,
            model("rnd1", "rnd1", "Q4_K_M-like"),
        ),
        run(
            "m-llama",
            "llama.cpp",
            300.0,
            model("rnd1", "rnd1", "Q4_K_M-like"),
        ),
    ];
    let text = render(&rows(&results), &[]);
    assert!(text.contains("| `rnd1`, random weights, T=160 |"), "{text}");
    assert!(text.contains("| `llada-q4km`, T=160 |"), "{text}");
    assert!(!text.contains("Every model compared"), "{text}");
}

fn serve_run(path: &str, model: &str, concurrency: u32, tokens_per_s: f64) -> ServeLoaded {
    let v = serde_json::json!({
        "kind": "lacuna.serve-load.raw.v0",
        "machine": {"id": "box", "threads": 2},
        "model": {"id": model},
        "workload": {"endpoint": "chat", "stream": true, "concurrency": concurrency,
                     "request": {"max_tokens": 64, "diffusion": {"steps": 16}}},
        "figures": {"requests": 10, "ok": 10, "errors": 0, "rejected_429": 0,
                    "requests_per_s": 1.0, "generated_tokens_per_s": tokens_per_s,
                    "latency_ms": {"p50": 100.0}, "time_to_first_content_ms": {"p50": 20.0}}
    });
    ServeLoaded {
        path: format!("bench-results/box/serve-load/{path}.json"),
        run: crate::serve::parse(v).unwrap(),
    }
}

#[test]
fn serve_picks_the_largest_gain_over_one_request_at_a_time() {
    let runs = vec![
        serve_run("demo-c1", "demo", 1, 400.0),
        serve_run("demo-c4", "demo", 4, 500.0),
        serve_run("demo-c16", "demo", 16, 480.0),
        serve_run("big-c1", "big", 1, 4.0),
        serve_run("big-c4", "big", 4, 4.4),
        // No baseline at concurrency 1: not compared.
        serve_run("other-c4", "other", 4, 9000.0),
    ];
    let p = select_serve(&runs).unwrap();
    assert_eq!(p.run.path, "bench-results/box/serve-load/demo-c4.json");
    assert_eq!(p.baseline.path, "bench-results/box/serve-load/demo-c1.json");
    assert_eq!(p.gains.len(), 3);
    let text = render_detail(&[], &runs);
    assert!(
        text.contains("| `lacuna serve`, 4 concurrent vs 1 | `demo`, chat, stream | 500.0 tokens/s | 1 at a time 400.0 tokens/s | 1.25× | 3 rows: 1.10×–1.25×, median 1.20× | [4 concurrent](box/serve-load/demo-c4.json) [1 concurrent](box/serve-load/demo-c1.json) |"),
        "{text}"
    );
    let text = render(&[], &runs);
    assert!(
        text.contains("| `lacuna serve`, 4 concurrent vs 1 | `demo`, chat, stream | 500.0 tokens/s | 1 at a time 400.0 tokens/s | 1.25× | 3 rows: 1.10×–1.25×, median 1.20× |\n"),
        "{text}"
    );
    assert!(select_serve(&runs[5..]).is_none());
}

#[test]
fn a_row_against_llama_cpps_own_build_heads_its_family_over_oracle_rows() {
    let oracle = |v: &mut serde_json::Value| {
        if v["engine"]["name"] == "llama.cpp" {
            v["engine"]["version"] = "llama-cpp-sys-2 0.1.161".into();
        }
    };
    let mut results = Vec::new();
    // 3x against the oracle build, 1.5x against llama.cpp's cmake build, 4x against the oracle.
    results.extend(pair("a", 100.0, 300.0, |v| oracle(v)));
    results.extend(pair(
        "b",
        100.0,
        150.0,
        model("b-q4km", "llada", "Q4_K_M-like"),
    ));
    results.extend(pair("c", 100.0, 400.0, |v| {
        model("c-q4km", "llada", "Q4_K_M-like")(v);
        oracle(v);
    }));
    let rows = rows(&results);
    let (id, s, all) = picked(&select(&rows), Family::Forward);
    assert_eq!((id.as_str(), s), ("b-q4km", 1.5));
    assert_eq!(all, vec![1.5, 3.0, 4.0]);
    // With oracle rows only, the largest speed-up heads the family as before.
    let rows2: Vec<_> = rows
        .into_iter()
        .filter(|r| r.model().id != "b-q4km")
        .collect();
    let (id, s, _) = picked(&select(&rows2), Family::Forward);
    assert_eq!((id.as_str(), s), ("c-q4km", 4.0));
}
