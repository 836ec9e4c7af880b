//! `lacuna.Engine`: a loaded model shared by Python threads ([`lacuna::SharedEngine`]).
//!
//! Every generation runs on a Rust thread of its own; the calling Python thread waits for
//! it with the GIL released, waking every [`POLL`] to let Python handle signals (Ctrl-C
//! cancels the generation). Generations of several Python threads on one engine run at
//! once, their forward passes batched.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lacuna::models::{Device, WeightLayout};
use lacuna::{
    CancelToken, ChatMessage, Demo, EngineOptions, GenerateRequest, Prepared, Prompt, SharedEngine,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::errors;
use crate::output::{Canvas, Output, Score};
use crate::settings;
use crate::stream::Stream;

/// How long a waiting Python thread sleeps between signal checks.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// What a generation's thread sends: each step's canvas (when streaming), then the result.
pub(crate) enum Event {
    /// A step's canvas.
    Step(Canvas),
    /// The generation's result.
    Done(lacuna::Result<lacuna::Output>),
}

/// Waits for the next message of `rx` with the GIL released, checking Python's signals
/// every [`POLL`]: on a pending exception (KeyboardInterrupt) the generation is cancelled
/// and the exception returned.
pub(crate) fn wait<T: Send>(
    py: Python<'_>,
    rx: &Mutex<Receiver<T>>,
    cancel: &CancelToken,
) -> PyResult<T> {
    loop {
        let got = py.detach(|| {
            let rx = rx.lock().unwrap_or_else(PoisonError::into_inner);
            rx.recv_timeout(POLL)
        });
        match got {
            Ok(v) => return Ok(v),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    cancel.cancel();
                    return Err(e);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(errors::lacuna(
                    py,
                    "the generation's thread ended without a result".to_string(),
                ));
            }
        }
    }
}

/// Starts `prepared` on a thread of its own, sending each step's canvas (when `stream`) and
/// then the result on `tx`.
pub(crate) fn spawn(
    py: Python<'_>,
    shared: &Arc<SharedEngine>,
    prepared: Prepared,
    cancel: &CancelToken,
    stream: bool,
    tx: Sender<Event>,
) -> PyResult<()> {
    let shared = Arc::clone(shared);
    let cancel = cancel.clone();
    std::thread::Builder::new()
        .name("lacuna-generate".to_string())
        .spawn(move || {
            let tokenizer = Arc::clone(shared.tokenizer());
            let mask = shared.mask_token_id();
            let steps = tx.clone();
            let out = shared.generate(&prepared, &cancel, |view| {
                if stream {
                    // A closed stream has been dropped, and so cancelled.
                    let _ = steps.send(Event::Step(Canvas::of(view, &tokenizer, mask)));
                }
            });
            let _ = tx.send(Event::Done(out));
        })
        .map(|_| ())
        .map_err(|e| errors::lacuna(py, format!("cannot start a generation thread: {e}")))
}

/// Parses an option that has names (`weights`, `device`): a `SettingsError` listing the
/// valid names when it is not one.
fn option<T>(py: Python<'_>, name: &str, value: Option<&str>) -> PyResult<T>
where
    T: std::str::FromStr<Err = lacuna::sampler::UnknownName> + Default,
{
    match value {
        None => Ok(T::default()),
        Some(s) => s.parse().map_err(|e: lacuna::sampler::UnknownName| {
            errors::settings(py, e.to_string(), Some(name))
        }),
    }
}

/// The engine options of `threads`, `weights` and `device`.
fn options(
    py: Python<'_>,
    threads: Option<&Bound<'_, PyAny>>,
    weights: Option<&str>,
    device: Option<&str>,
) -> PyResult<EngineOptions> {
    let threads = match threads {
        Some(t) if !t.is_none() => Some(settings::count("threads", t)?),
        _ => None,
    };
    Ok(EngineOptions {
        threads,
        weights: option::<WeightLayout>(py, "weights", weights)?,
        device: option::<Device>(py, "device", device)?,
    })
}

/// `model` itself, or for `hf:OWNER/REPO:QUANT` / `hf:OWNER/REPO/FILE.gguf` the file in the
/// Hugging Face cache (downloaded when missing), as `lacuna -m` resolves it.
fn resolve_model(model: PathBuf) -> Result<PathBuf, lacuna_hub::Error> {
    let Some(reference) = model.to_str().and_then(lacuna_hub::ModelRef::from_hf_arg) else {
        return Ok(model);
    };
    let reference = reference?;
    lacuna_hub::Hub::from_env().and_then(|h| h.resolve(&reference))
}

/// Why a model did not load.
enum LoadError {
    Hub(lacuna_hub::Error),
    Engine(lacuna::Error),
}

impl LoadError {
    /// A `SettingsError` for a malformed `hf:` reference, else the engine's mapping (a
    /// `LacunaError` for a hub, file or model failure).
    fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            LoadError::Hub(e @ lacuna_hub::Error::InvalidReference { .. }) => {
                errors::settings(py, e.to_string(), None)
            }
            LoadError::Hub(e) => errors::lacuna(py, e.to_string()),
            LoadError::Engine(e) => errors::from_lacuna(py, &e),
        }
    }
}

/// A Lacuna engine: one diffusion language model loaded from a GGUF file, with its
/// tokenizer, chat template and worker threads.
///
/// `Engine(model, threads=None, weights=None, device=None)` loads `model`: a GGUF path or
/// an `hf:OWNER/REPO:QUANT` reference (`hf:OWNER/REPO/FILE.gguf`), taken from the Hugging
/// Face cache and downloaded when missing, as `lacuna run -m` takes it. `threads`: worker
/// threads (default one per logical core); `weights`: `"auto"`, `"fast"` or `"compact"`;
/// `device`: `"auto"`, `"cpu"`, `"cuda"` or `"cuda:N"`. Loading maps the file and repacks
/// the weights (seconds for a large model), with the GIL released.
///
/// An engine may be used from several threads at once: each generation has its own cache,
/// and the forward passes of generations running at the same time are batched.
#[pyclass(frozen, module = "lacuna")]
pub(crate) struct Engine {
    shared: Arc<SharedEngine>,
    demo: Option<Demo>,
}

impl Engine {
    /// The request for `prompt` under the keyword settings (a demo model's schedule filled
    /// in where they give none, as `lacuna run --demo` does).
    fn request(
        &self,
        py: Python<'_>,
        method: &str,
        prompt: Prompt,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<GenerateRequest> {
        let mut s = settings::from_kwargs(method, kwargs)?;
        if let Some(demo) = self.demo {
            s = demo.defaults(s);
        }
        s.request(prompt, self.shared.arch())
            .map_err(|e| errors::from_settings(py, &e))
    }

    /// Checks `request` against the model (with the GIL released: a structured-output
    /// constraint compiles here).
    fn prepare(&self, py: Python<'_>, request: &GenerateRequest) -> PyResult<Prepared> {
        let shared = &self.shared;
        py.detach(|| shared.prepare(request))
            .map_err(|e| errors::from_lacuna(py, &e))
    }

    /// Runs `request` to its end on a thread of its own, waiting with the GIL released.
    fn run(&self, py: Python<'_>, request: &GenerateRequest) -> PyResult<Output> {
        let prepared = self.prepare(py, request)?;
        let cancel = CancelToken::new();
        let (tx, rx) = mpsc::channel();
        spawn(py, &self.shared, prepared, &cancel, false, tx)?;
        let rx = Mutex::new(rx);
        loop {
            match wait(py, &rx, &cancel)? {
                Event::Step(_) => {}
                Event::Done(out) => {
                    let out = out.map_err(|e| errors::from_lacuna(py, &e))?;
                    return Output::of(py, self.shared.tokenizer(), &out);
                }
            }
        }
    }

    /// Starts `request` and returns its stream.
    fn start_stream(&self, py: Python<'_>, request: &GenerateRequest) -> PyResult<Stream> {
        let prepared = self.prepare(py, request)?;
        let cancel = CancelToken::new();
        let (tx, rx) = mpsc::channel();
        spawn(py, &self.shared, prepared, &cancel, true, tx)?;
        Ok(Stream::new(rx, cancel, Arc::clone(&self.shared)))
    }

    /// A prompt from `str` (raw text, no chat template) or a list of token ids.
    fn prompt(prompt: &Bound<'_, PyAny>) -> PyResult<Prompt> {
        if let Ok(s) = prompt.cast::<PyString>() {
            return Ok(Prompt::Text(s.to_cow()?.into_owned()));
        }
        if let Ok(ids) = prompt.extract::<Vec<u32>>() {
            return Ok(Prompt::Tokens(ids));
        }
        Err(errors::type_error(format!(
            "the prompt must be a str or a list of token ids, got {}",
            prompt
                .get_type()
                .name()
                .map_or_else(|_| "?".to_string(), |n| n.to_string())
        )))
    }

    /// Chat messages from a list of `{"role": str, "content": str}` dicts.
    fn messages(messages: &Bound<'_, PyAny>) -> PyResult<Prompt> {
        let list = messages.cast::<PyList>().map_err(|_| {
            errors::type_error(
                "messages must be a list of {\"role\": str, \"content\": str} dicts".to_string(),
            )
        })?;
        let mut out = Vec::with_capacity(list.len());
        for (i, m) in list.iter().enumerate() {
            let dict = m.cast::<PyDict>().map_err(|_| {
                errors::type_error(format!(
                    "messages[{i}] must be a dict with \"role\" and \"content\""
                ))
            })?;
            let field = |key: &str| -> PyResult<String> {
                match dict.get_item(key)? {
                    None => Err(errors::type_error(format!("messages[{i}] has no {key:?}"))),
                    Some(v) => v.extract::<String>().map_err(|_| {
                        errors::type_error(format!("messages[{i}][{key:?}] must be a str"))
                    }),
                }
            };
            out.push(ChatMessage::new(field("role")?, field("content")?));
        }
        Ok(Prompt::Chat(out))
    }
}

#[pymethods]
impl Engine {
    #[new]
    #[pyo3(signature = (model, threads = None, weights = None, device = None))]
    fn new(
        py: Python<'_>,
        model: PathBuf,
        threads: Option<&Bound<'_, PyAny>>,
        weights: Option<&str>,
        device: Option<&str>,
    ) -> PyResult<Self> {
        let options = options(py, threads, weights, device)?;
        let engine = py
            .detach(|| {
                let path = resolve_model(model).map_err(LoadError::Hub)?;
                lacuna::Engine::load(&path, &options).map_err(LoadError::Engine)
            })
            .map_err(|e| e.into_py(py))?;
        Ok(Self {
            shared: Arc::new(SharedEngine::new(engine)),
            demo: None,
        })
    }

    /// An engine over a demo model built into the package (no file, no download): `"kjv"`
    /// (the default; a 4-layer LLaDA trained on the King James Bible, with a chat template),
    /// `"tasks"` (addition, sorting and reversal as raw prompts: `"rev: lantern ="`) or
    /// `"tasks-llada2"` (its LLaDA2 twin). Their generations take the schedule each was
    /// trained for where the settings give none, as `lacuna run --demo` does.
    #[staticmethod]
    #[pyo3(signature = (name = "kjv", threads = None, weights = None, device = None))]
    fn demo(
        py: Python<'_>,
        name: &str,
        threads: Option<&Bound<'_, PyAny>>,
        weights: Option<&str>,
        device: Option<&str>,
    ) -> PyResult<Self> {
        let demo: Demo = name
            .parse()
            .map_err(|e: lacuna::UnknownDemo| errors::settings(py, e.to_string(), None))?;
        let options = options(py, threads, weights, device)?;
        let engine = py
            .detach(|| lacuna::Engine::demo_model(demo, &options))
            .map_err(|e| errors::from_lacuna(py, &e))?;
        Ok(Self {
            shared: Arc::new(SharedEngine::new(engine)),
            demo: Some(demo),
        })
    }

    /// The demo models' names.
    #[staticmethod]
    fn demos() -> Vec<&'static str> {
        Demo::ALL.iter().map(|d| d.name()).collect()
    }

    /// Generates for `prompt` (a `str`, used as raw text without the chat template, or a
    /// list of token ids) and returns its `Output`. Settings are keywords named as
    /// `lacuna::Settings`' fields (`gen_length`, `steps`, `block_length`, `temperature`,
    /// `seed`, `logprobs`, ...). Blocks until done, with the GIL released.
    #[pyo3(signature = (prompt, **settings))]
    fn generate(
        &self,
        py: Python<'_>,
        prompt: &Bound<'_, PyAny>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Output> {
        let request = self.request(py, "generate", Self::prompt(prompt)?, settings)?;
        self.run(py, &request)
    }

    /// Generates for chat `messages` (a list of `{"role", "content"}` dicts) through the
    /// model's chat template, an assistant turn opened.
    #[pyo3(signature = (messages, **settings))]
    fn chat(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Output> {
        let request = self.request(py, "chat", Self::messages(messages)?, settings)?;
        self.run(py, &request)
    }

    /// Fills in the middle: `prefix` (raw text), `gen_length` masks, then `suffix`; returns
    /// the middle. `infill_lengths=[...]` tries several middle lengths and keeps the fill
    /// the model scores best. Bidirectional models only (not LLaDA2).
    #[pyo3(signature = (prefix, suffix, **settings))]
    fn infill(
        &self,
        py: Python<'_>,
        prefix: String,
        suffix: String,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Output> {
        let mut request = self.request(py, "infill", Prompt::Text(prefix), settings)?;
        request.suffix = Some(suffix);
        self.run(py, &request)
    }

    /// Starts a generation for `prompt` and returns an iterator over its steps: a `Canvas`
    /// per denoising step, then the `Output`. Bad settings raise here, before anything runs.
    /// Dropping the iterator (or `break`, `close()`, leaving a `with` block) cancels the
    /// generation before its next forward pass.
    #[pyo3(signature = (prompt, **settings))]
    fn stream(
        &self,
        py: Python<'_>,
        prompt: &Bound<'_, PyAny>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Stream> {
        let request = self.request(py, "stream", Self::prompt(prompt)?, settings)?;
        self.start_stream(py, &request)
    }

    /// `stream` for chat `messages`.
    #[pyo3(signature = (messages, **settings))]
    fn stream_chat(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Stream> {
        let request = self.request(py, "stream_chat", Self::messages(messages)?, settings)?;
        self.start_stream(py, &request)
    }

    /// `stream` for an infill: the canvases are the middle's.
    #[pyo3(signature = (prefix, suffix, **settings))]
    fn stream_infill(
        &self,
        py: Python<'_>,
        prefix: String,
        suffix: String,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Stream> {
        let mut request = self.request(py, "stream_infill", Prompt::Text(prefix), settings)?;
        request.suffix = Some(suffix);
        self.start_stream(py, &request)
    }

    /// Scores a text (a `str`, tokenized with the vocabulary's BOS rule, or token ids):
    /// every token's log-likelihood value under the model, the LLaDA estimate over
    /// `samples` mask sets per estimate (`lacuna::Settings::likelihood_samples`, default
    /// 128; exact where there are no more sets than that), drawn from `seed`, with `logprobs`
    /// alternatives per token. Costs one forward pass per mask set (see
    /// `Score.passes`), with the GIL released.
    #[pyo3(signature = (text, samples = None, seed = None, logprobs = None))]
    fn score(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        samples: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        logprobs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Score> {
        let prompt = Self::prompt(text)?;
        let mut s = lacuna::Settings::default();
        if let Some(v) = seed.filter(|v| !v.is_none()) {
            s.seed = Some(settings::seed("seed", v)?);
        }
        if let Some(n) = samples.filter(|v| !v.is_none()) {
            s.likelihood_samples = Some(settings::count("samples", n)?);
        }
        if let Some(k) = logprobs.filter(|v| !v.is_none()) {
            s.logprobs = Some(settings::count("logprobs", k)?);
        }
        let scoring = s.scoring();
        let shared = Arc::clone(&self.shared);
        let cancel = CancelToken::new();
        let (tx, rx) = mpsc::channel();
        let worker_cancel = cancel.clone();
        std::thread::Builder::new()
            .name("lacuna-score".to_string())
            .spawn(move || {
                let out = shared.prompt_tokens(&prompt).and_then(|tokens| {
                    shared
                        .score(&tokens, &scoring, &worker_cancel)
                        .map(|e| (tokens, e))
                });
                let _ = tx.send(out);
            })
            .map_err(|e| errors::lacuna(py, format!("cannot start a scoring thread: {e}")))?;
        let (tokens, echo) =
            wait(py, &Mutex::new(rx), &cancel)?.map_err(|e| errors::from_lacuna(py, &e))?;
        Ok(Score::of(tokens, echo))
    }

    /// The token ids of `text` (BOS/EOS as the vocabulary asks, special tokens parsed), as
    /// a text prompt is encoded.
    fn tokenize(&self, py: Python<'_>, text: String) -> PyResult<Vec<u32>> {
        self.shared
            .prompt_tokens(&Prompt::Text(text))
            .map_err(|e| errors::from_lacuna(py, &e))
    }

    /// The text of token ids (control tokens hidden), as an `Output.text` is decoded.
    fn decode(&self, py: Python<'_>, tokens: Vec<u32>) -> PyResult<String> {
        self.shared
            .tokenizer()
            .decode(&tokens)
            .map_err(|e| errors::from_lacuna(py, &lacuna::Error::Tokenizer(e)))
    }

    /// Counters since the engine was made: generations running now (`active`), forward
    /// passes (`forwards`: each batch is one), canvases' passes over all batches (`passes`:
    /// more than `forwards` when generations were batched), denoising `steps` and
    /// `committed` positions over all generations.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.shared.stats();
        let d = PyDict::new(py);
        d.set_item("active", s.active)?;
        d.set_item("forwards", s.forwards)?;
        d.set_item("passes", s.passes)?;
        d.set_item("steps", s.steps)?;
        d.set_item("committed", s.committed)?;
        Ok(d)
    }

    /// `general.name`, or the architecture when the file has none.
    #[getter]
    fn name(&self) -> &str {
        self.shared.name()
    }

    /// The architecture (`"llada"`, `"dream"`, `"llada2"`, ...), which picks the sampler.
    #[getter]
    fn arch(&self) -> &'static str {
        self.shared.arch().name()
    }

    /// The demo model's name, or None for a model file.
    #[getter]
    fn demo_name(&self) -> Option<&'static str> {
        self.demo.map(Demo::name)
    }

    /// Whether the model has a chat template (`chat` needs one).
    #[getter]
    fn has_chat_template(&self) -> bool {
        self.shared.has_chat_template()
    }

    /// The mask token id.
    #[getter]
    fn mask_token_id(&self) -> u32 {
        self.shared.mask_token_id()
    }

    /// The end tokens generation stops at.
    #[getter]
    fn eos_ids(&self) -> Vec<u32> {
        self.shared.eos_ids().to_vec()
    }

    /// The longest canvas (prompt + generated tokens) the model accepts.
    #[getter]
    fn context_length(&self) -> usize {
        self.shared.context_length()
    }

    /// Worker threads of the engine's pool.
    #[getter]
    fn threads(&self) -> usize {
        self.shared.threads()
    }

    /// Seconds the model took to load.
    #[getter]
    fn load_s(&self) -> f64 {
        self.shared.load_s()
    }

    /// Whether the weights are on a CUDA device (else in host memory).
    #[getter]
    fn on_gpu(&self) -> bool {
        self.shared.info().on_gpu
    }

    fn __repr__(&self) -> String {
        format!(
            "Engine(name={:?}, arch={:?}, threads={})",
            self.shared.name(),
            self.shared.arch().name(),
            self.shared.threads()
        )
    }
}
