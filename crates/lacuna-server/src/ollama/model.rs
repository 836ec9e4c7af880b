//! The served model as Ollama's listings describe one: `/api/tags`, `/api/show` and
//! `/api/ps`, from the model file's size, parameter count and metadata
//! ([`lacuna::ModelInfo`]).

use lacuna::gguf::{Array, Value as GgufValue};
use lacuna::models::Arch;
use serde_json::{Map, Value, json};

use super::reply::rfc3339;
use crate::routes::App;

/// `id` as Ollama names models, `name:tag`: with the default tag `:latest` when it has none.
pub(crate) fn tagged(id: &str) -> String {
    let last = id.rsplit('/').next().unwrap_or(id);
    if last.contains(':') {
        id.to_string()
    } else {
        format!("{id}:latest")
    }
}

/// Ollama's `format.HumanNumber`: `7.6B`, `494.03M`, `12K`.
pub(crate) fn human_number(n: u64) -> String {
    const K: u64 = 1000;
    const M: u64 = K * 1000;
    const B: u64 = M * 1000;
    let f = n as f64;
    if n >= B {
        let x = f / B as f64;
        if x.fract() == 0.0 {
            format!("{x:.0}B")
        } else {
            format!("{x:.1}B")
        }
    } else if n >= M {
        let x = f / M as f64;
        if x.fract() == 0.0 {
            format!("{x:.0}M")
        } else {
            format!("{x:.2}M")
        }
    } else if n >= K {
        format!("{:.0}K", f / K as f64)
    } else {
        n.to_string()
    }
}

/// A metadata value as JSON; an array of more than 5 elements is `[]` unless `verbose`
/// (as Ollama leaves out the vocabulary and merges).
fn json_of(v: &GgufValue, verbose: bool) -> Value {
    match v {
        GgufValue::U8(x) => json!(x),
        GgufValue::I8(x) => json!(x),
        GgufValue::U16(x) => json!(x),
        GgufValue::I16(x) => json!(x),
        GgufValue::U32(x) => json!(x),
        GgufValue::I32(x) => json!(x),
        GgufValue::U64(x) => json!(x),
        GgufValue::I64(x) => json!(x),
        GgufValue::F32(x) => json!(x),
        GgufValue::F64(x) => json!(x),
        GgufValue::Bool(x) => json!(x),
        GgufValue::String(s) => json!(s),
        GgufValue::Array(a) if !verbose && a.len() > 5 => json!([]),
        GgufValue::Array(a) => array_json(a),
    }
}

fn array_json(a: &Array) -> Value {
    match a {
        Array::U8(v) => json!(v),
        Array::I8(v) => json!(v),
        Array::U16(v) => json!(v),
        Array::I16(v) => json!(v),
        Array::U32(v) => json!(v),
        Array::I32(v) => json!(v),
        Array::U64(v) => json!(v),
        Array::I64(v) => json!(v),
        Array::F32(v) => json!(v),
        Array::F64(v) => json!(v),
        Array::Bool(v) => json!(v),
        Array::String(v) => json!(v),
        Array::Array(v) => Value::Array(v.iter().map(array_json).collect()),
    }
}

/// What the listings say about the served model.
struct Facts<'a> {
    app: &'a App,
    info: &'a lacuna::ModelInfo,
    arch: Arch,
}

impl<'a> Facts<'a> {
    fn of(app: &'a App) -> Self {
        let engine = app.scheduler.engine();
        Self {
            app,
            info: engine.info(),
            arch: engine.arch(),
        }
    }

    fn name(&self) -> String {
        tagged(&self.app.config.model_id)
    }

    /// `general.file_type`'s name (`Q4_K_M`, `F16`), or `unknown`.
    fn quantization(&self) -> String {
        self.info
            .metadata
            .get_u64_lenient("general.file_type")
            .ok()
            .and_then(|t| u32::try_from(t).ok())
            .and_then(lacuna::models::preset::file_type_name)
            .unwrap_or("unknown")
            .to_string()
    }

    fn details(&self) -> Value {
        let family = self.arch.name();
        json!({
            "parent_model": "",
            "format": "gguf",
            "family": family,
            "families": [family],
            "parameter_size": human_number(self.info.parameters),
            "quantization_level": self.quantization(),
        })
    }

    /// The metadata as JSON (without `general.name` and the chat template, as Ollama
    /// gives it), with `general.parameter_count` when the file does not say it.
    fn model_info(&self, verbose: bool) -> Map<String, Value> {
        let mut m: Map<String, Value> = self
            .info
            .metadata
            .iter()
            .filter(|(k, _)| !matches!(*k, "general.name" | "tokenizer.chat_template"))
            .map(|(k, v)| (k.to_string(), json_of(v, verbose)))
            .collect();
        m.entry("general.parameter_count")
            .or_insert_with(|| json!(self.info.parameters));
        m
    }

    /// A 64-bit FNV-1a hash, in hex, of the file's size, parameter count and metadata (array
    /// lengths, not contents): an identifier of the served file. There is no registry
    /// manifest to take a SHA-256 of.
    fn digest(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for &b in bytes {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        };
        eat(&self.info.file_bytes.to_le_bytes());
        eat(&self.info.parameters.to_le_bytes());
        for (k, v) in self.info.metadata.iter() {
            eat(k.as_bytes());
            match v {
                GgufValue::Array(a) => eat(&(a.len() as u64).to_le_bytes()),
                v => eat(json_of(v, false).to_string().as_bytes()),
            }
        }
        format!("{h:016x}")
    }

    /// Ollama's capabilities of the model: completion; tools where a chat template can
    /// describe them; insert (a `suffix`) where the attention sees the suffix.
    fn capabilities(&self) -> Vec<&'static str> {
        let mut c = vec!["completion"];
        if self.app.scheduler.engine().has_chat_template() {
            c.push("tools");
        }
        if self.arch != Arch::Llada2 {
            c.push("insert");
        }
        c
    }

    fn modified_at(&self) -> String {
        rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_secs(self.app.started))
    }
}

/// The model as `/api/tags` lists it.
pub(crate) fn listed(app: &App) -> Value {
    let f = Facts::of(app);
    json!({
        "name": f.name(),
        "model": f.name(),
        "modified_at": f.modified_at(),
        "size": f.info.file_bytes,
        "digest": f.digest(),
        "details": f.details(),
        "capabilities": f.capabilities(),
    })
}

/// The model as `/api/ps` lists it: loaded for as long as the server runs.
pub(crate) fn running(app: &App) -> Value {
    let f = Facts::of(app);
    let vram = if f.info.on_gpu {
        f.info.weight_bytes
    } else {
        0
    };
    json!({
        "name": f.name(),
        "model": f.name(),
        "size": f.info.weight_bytes,
        "digest": f.digest(),
        "details": f.details(),
        "expires_at": "9999-12-31T23:59:59Z",
        "size_vram": vram,
        "context_length": app.scheduler.engine().context_length(),
    })
}

/// `/api/show`'s answer. `parameters` and the Modelfile list Lacuna's defaults (temperature
/// 0, 128 tokens) and the context; `template` is the GGUF's Jinja chat template, as Ollama
/// gives a model's own template.
pub(crate) fn shown(app: &App, verbose: bool) -> Value {
    let f = Facts::of(app);
    let context = app.scheduler.engine().context_length();
    let params = [
        ("num_ctx", context.to_string()),
        ("num_predict", crate::params::DEFAULT_MAX_TOKENS.to_string()),
        ("temperature", "0".to_string()),
    ];
    let parameters: Vec<String> = params.iter().map(|(k, v)| format!("{k:<30} {v}")).collect();
    let mut modelfile = format!(
        "# Modelfile generated by \"lacuna serve\" (a diffusion language model, {})\nFROM {}\n",
        f.arch.name(),
        f.name()
    );
    for (k, v) in &params {
        modelfile.push_str(&format!("PARAMETER {k} {v}\n"));
    }
    let mut v = json!({
        "modelfile": modelfile,
        "parameters": parameters.join("\n"),
        "details": f.details(),
        "model_info": f.model_info(verbose),
        "capabilities": f.capabilities(),
        "modified_at": f.modified_at(),
    });
    if let Ok(t) = f.info.metadata.get::<&str>("tokenizer.chat_template") {
        v["template"] = json!(t);
    }
    v
}
