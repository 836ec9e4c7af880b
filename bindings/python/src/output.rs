//! What a generation gives back, as Python objects: [`Output`] (with its [`Stats`],
//! [`Timings`], [`TokenLogprob`]s and [`InfillSearch`]), the [`Canvas`] of each streamed
//! step, and a scoring's [`Score`]. Each is built once, with the GIL, from the Rust value;
//! its attributes are read-only.

use lacuna::StepView;
use lacuna::tokenizer::Tokenizer;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A token's text as the CLI's and the server's logprobs show it: its bytes (control tokens
/// empty), invalid UTF-8 as U+FFFD.
fn token_text(tokenizer: &Tokenizer, id: u32) -> (String, Vec<u8>) {
    let bytes = tokenizer
        .token_bytes(id, false)
        .unwrap_or_default()
        .to_vec();
    (String::from_utf8_lossy(&bytes).into_owned(), bytes)
}

/// Counters of one generation (`lacuna::Stats`).
#[pyclass(frozen, get_all, module = "lacuna")]
pub(crate) struct Stats {
    /// Denoising steps that ran the model.
    steps: usize,
    /// Forward passes (calls of the denoiser; two per step with classifier-free guidance).
    denoiser_calls: usize,
    /// Logit rows computed in total.
    logit_rows: usize,
    /// Passes that refreshed the key/value cache (0 without a cache).
    cache_fills: usize,
    /// Canvas positions run through the model, over all passes.
    positions_computed: usize,
    /// Why it ended: `"completed"` (the schedule ran out, or no mask remained) or `"eos"`
    /// (an end token was committed with everything before it committed).
    finish: &'static str,
    /// With `finish == "eos"`: the end token's index in the generated region.
    eos_index: Option<usize>,
    /// With `finish == "eos"`: the end token.
    eos_token: Option<u32>,
}

#[pymethods]
impl Stats {
    fn __repr__(&self) -> String {
        format!(
            "Stats(steps={}, denoiser_calls={}, cache_fills={}, positions_computed={}, finish={:?})",
            self.steps, self.denoiser_calls, self.cache_fills, self.positions_computed, self.finish
        )
    }
}

impl Stats {
    fn of(s: &lacuna::Stats) -> Self {
        let (finish, eos_index, eos_token) = match s.finish {
            lacuna::Finish::Completed => ("completed", None, None),
            lacuna::Finish::Eos { index, token } => ("eos", Some(index), Some(token)),
        };
        Self {
            steps: s.steps,
            denoiser_calls: s.denoiser_calls,
            logit_rows: s.logit_rows,
            cache_fills: s.cache_fills,
            positions_computed: s.positions_computed,
            finish,
            eos_index,
            eos_token,
        }
    }
}

/// Wall-clock timings of one generation (`lacuna::Timings`).
#[pyclass(frozen, get_all, module = "lacuna")]
pub(crate) struct Timings {
    /// Prompt preparation (chat template, tokenization, checks), seconds.
    prepare_s: f64,
    /// Each denoising step, milliseconds, in order.
    step_ms: Vec<f64>,
    /// Each encoder pass (DiffusionGemma only), milliseconds.
    encode_ms: Vec<f64>,
    /// The whole generation, seconds.
    total_s: f64,
    /// The median step, milliseconds (0 when no step ran).
    step_ms_median: f64,
}

#[pymethods]
impl Timings {
    fn __repr__(&self) -> String {
        format!(
            "Timings(prepare_s={:.4}, steps={}, step_ms_median={:.3}, total_s={:.4})",
            self.prepare_s,
            self.step_ms.len(),
            self.step_ms_median,
            self.total_s
        )
    }
}

/// One alternative of a [`TokenLogprob`].
#[pyclass(frozen, module = "lacuna")]
pub(crate) struct TopLogprob {
    /// The token id.
    #[pyo3(get)]
    token: u32,
    /// Its text.
    #[pyo3(get)]
    text: String,
    /// Its natural-log probability.
    #[pyo3(get)]
    logprob: f32,
    bytes: Vec<u8>,
}

#[pymethods]
impl TopLogprob {
    /// The token's bytes.
    #[getter]
    fn bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.bytes)
    }

    fn __repr__(&self) -> String {
        format!(
            "TopLogprob(token={}, text={:?}, logprob={})",
            self.token, self.text, self.logprob
        )
    }
}

/// A generated token's log-probability and its most probable alternatives, from the
/// denoising step that committed it (`lacuna::TokenLogprob`).
#[pyclass(frozen, module = "lacuna")]
pub(crate) struct TokenLogprob {
    /// The token id.
    #[pyo3(get)]
    token: u32,
    /// Its text.
    #[pyo3(get)]
    text: String,
    /// Its natural-log probability under the committing step's logits.
    #[pyo3(get)]
    logprob: f32,
    bytes: Vec<u8>,
    top: Vec<Py<TopLogprob>>,
}

#[pymethods]
impl TokenLogprob {
    /// The token's bytes.
    #[getter]
    fn bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.bytes)
    }

    /// The most probable tokens of that step's row, most probable first.
    #[getter]
    fn top(&self, py: Python<'_>) -> Vec<Py<TopLogprob>> {
        self.top.iter().map(|t| t.clone_ref(py)).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "TokenLogprob(token={}, text={:?}, logprob={}, top=[{} alternatives])",
            self.token,
            self.text,
            self.logprob,
            self.top.len()
        )
    }
}

impl TokenLogprob {
    fn of(py: Python<'_>, tokenizer: &Tokenizer, r: &lacuna::TokenLogprob) -> PyResult<Self> {
        let (text, bytes) = token_text(tokenizer, r.token);
        let top = r
            .top
            .iter()
            .map(|t| {
                let (text, bytes) = token_text(tokenizer, t.token);
                Py::new(
                    py,
                    TopLogprob {
                        token: t.token,
                        text,
                        logprob: t.logprob,
                        bytes,
                    },
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Self {
            token: r.token,
            text,
            logprob: r.logprob,
            bytes,
            top,
        })
    }
}

/// One middle length an infill search tried (`lacuna::infill::InfillCandidate`).
#[pyclass(frozen, get_all, module = "lacuna")]
pub(crate) struct InfillCandidate {
    /// The middle's length (masks laid down between prefix and suffix).
    length: usize,
    /// How well the fill leads into the suffix (mean log-probability of the suffix's head;
    /// `-inf` when nothing was committed).
    score: f64,
    /// The fill's tokens (cut at its first end token).
    tokens: usize,
    /// The fill.
    text: String,
}

/// What an infill length search tried and which it returned.
#[pyclass(frozen, module = "lacuna")]
pub(crate) struct InfillSearch {
    /// Index into `candidates` of the fill returned.
    #[pyo3(get)]
    chosen: usize,
    candidates: Vec<Py<InfillCandidate>>,
}

#[pymethods]
impl InfillSearch {
    /// Every length tried, shortest first.
    #[getter]
    fn candidates(&self, py: Python<'_>) -> Vec<Py<InfillCandidate>> {
        self.candidates.iter().map(|c| c.clone_ref(py)).collect()
    }
}

/// The result of a generation (`lacuna::Output`).
#[pyclass(frozen, module = "lacuna")]
pub(crate) struct Output {
    /// The generated text (cut at the first end token, control tokens hidden).
    #[pyo3(get)]
    text: String,
    /// The generated token ids (cut before the first end token unless `keep_after_eos`).
    #[pyo3(get)]
    tokens: Vec<u32>,
    /// The prompt as token ids (after the chat template).
    #[pyo3(get)]
    prompt_tokens: Vec<u32>,
    /// The final canvas, prompt included (positions still masked hold `mask_id`).
    #[pyo3(get)]
    canvas: Vec<u32>,
    /// The mask token id.
    #[pyo3(get)]
    mask_id: u32,
    /// Sampler counters.
    #[pyo3(get)]
    stats: Py<Stats>,
    /// Wall-clock timings.
    #[pyo3(get)]
    timings: Py<Timings>,
    /// With `infill_lengths`: every length tried.
    #[pyo3(get)]
    infill: Option<Py<InfillSearch>>,
    /// Generated positions per second of the whole call.
    #[pyo3(get)]
    tokens_per_s: f64,
    /// Generated positions committed per forward pass.
    #[pyo3(get)]
    tokens_per_forward: f64,
    /// Canvas positions run through the model per forward pass.
    #[pyo3(get)]
    positions_per_forward: f64,
    logprobs: Option<Vec<Option<Py<TokenLogprob>>>>,
}

#[pymethods]
impl Output {
    /// With `logprobs=N`: one entry per token of `tokens` (None for a position never
    /// committed); None when not asked for.
    #[getter]
    fn logprobs(&self, py: Python<'_>) -> Option<Vec<Option<Py<TokenLogprob>>>> {
        self.logprobs.as_ref().map(|v| {
            v.iter()
                .map(|r| r.as_ref().map(|r| r.clone_ref(py)))
                .collect()
        })
    }

    /// Forward passes: `stats.denoiser_calls` (the CLI's `forwards`).
    #[getter]
    fn forwards(&self, py: Python<'_>) -> usize {
        self.stats.bind(py).get().denoiser_calls
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let stats = self.stats.bind(py).get();
        format!(
            "Output(text={:?}, tokens=[{} ids], steps={}, forwards={}, finish={:?})",
            self.text,
            self.tokens.len(),
            stats.steps,
            stats.denoiser_calls,
            stats.finish
        )
    }

    fn __str__(&self) -> String {
        self.text.clone()
    }
}

impl Output {
    /// The Python value of `out` (`tokenizer` gives the logprobs' token texts).
    pub(crate) fn of(
        py: Python<'_>,
        tokenizer: &Tokenizer,
        out: &lacuna::Output,
    ) -> PyResult<Self> {
        let t = &out.timings;
        let timings = Timings {
            prepare_s: t.prepare_s,
            step_ms: t.step_ms.clone(),
            encode_ms: t.encode_ms.clone(),
            total_s: t.total_s,
            step_ms_median: t.step_ms_median(),
        };
        let logprobs = match &out.logprobs {
            None => None,
            Some(records) => Some(
                records
                    .iter()
                    .map(|r| match r {
                        None => Ok(None),
                        Some(r) => Ok(Some(Py::new(py, TokenLogprob::of(py, tokenizer, r)?)?)),
                    })
                    .collect::<PyResult<Vec<_>>>()?,
            ),
        };
        let infill = match &out.infill {
            None => None,
            Some(search) => {
                let candidates = search
                    .candidates
                    .iter()
                    .map(|c| {
                        Py::new(
                            py,
                            InfillCandidate {
                                length: c.length,
                                score: c.score,
                                tokens: c.tokens,
                                text: c.text.clone(),
                            },
                        )
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                Some(Py::new(
                    py,
                    InfillSearch {
                        chosen: search.chosen,
                        candidates,
                    },
                )?)
            }
        };
        Ok(Self {
            text: out.text.clone(),
            tokens: out.tokens.clone(),
            prompt_tokens: out.prompt_tokens.clone(),
            canvas: out.canvas.clone(),
            mask_id: out.mask_id,
            stats: Py::new(py, Stats::of(&out.stats))?,
            timings: Py::new(py, timings)?,
            infill,
            tokens_per_s: out.tokens_per_s(),
            tokens_per_forward: out.tokens_per_forward(),
            positions_per_forward: out.positions_per_forward(),
            logprobs,
        })
    }
}

/// The glyph a masked position is drawn as in [`Canvas::text`] (the CLI's `--visual`
/// glyph).
pub(crate) const MASK_GLYPH: char = '░';

/// [`MASK_GLYPH`] as a string.
const MASK_GLYPH_STR: &str = "░";

/// One denoising step's canvas, as a stream yields it: the generated region (between the
/// prompt and, for an infill, the suffix) with its masks. Copied out of the step's
/// `lacuna::StepView` on the generation's thread, without the GIL.
#[pyclass(frozen, get_all, module = "lacuna")]
pub(crate) struct Canvas {
    /// 0-based index of this step in the schedule.
    step: usize,
    /// Steps in the schedule (an upper bound in parallel mode).
    total_steps: usize,
    /// 0-based index of the current block.
    block: usize,
    /// Number of blocks.
    num_blocks: usize,
    /// The generated region's token ids; masked positions hold `mask_id`.
    tokens: Vec<u32>,
    /// Each position's text (control tokens shown), None for a mask.
    pieces: Vec<Option<String>>,
    /// The pieces joined, each mask drawn as `░`.
    text: String,
    /// Positions (indices into `tokens`) committed this step, most confident first.
    committed: Vec<usize>,
    /// The confidence each committed position was ranked by.
    confidences: Vec<f64>,
    /// Masked positions left.
    masks: usize,
    /// Positions at the end that are a draft, redrawn each step (DiffusionGemma); 0 for the
    /// masked-diffusion samplers.
    draft: usize,
    /// The mask token id.
    mask_id: u32,
}

#[pymethods]
impl Canvas {
    fn __repr__(&self) -> String {
        format!(
            "Canvas(step={}/{}, committed={}, masks={}, text={:?})",
            self.step + 1,
            self.total_steps,
            self.committed.len(),
            self.masks,
            self.text
        )
    }

    fn __str__(&self) -> String {
        self.text.clone()
    }
}

impl Canvas {
    /// A copy of `view`'s generated region, its pieces decoded with `tokenizer`.
    pub(crate) fn of(view: &StepView<'_>, tokenizer: &Tokenizer, mask_id: u32) -> Self {
        // The generated region (the view's canvas holds no infill suffix: that is
        // `view.suffix`).
        let start = view.prompt_len.min(view.canvas.len());
        let region = &view.canvas[start..];
        // A model that drafts (uniform noise, no mask token) has no masks.
        let is_mask = |t: u32| view.draft == 0 && t == mask_id;
        let pieces: Vec<Option<String>> = region
            .iter()
            .map(|&t| {
                (!is_mask(t)).then(|| {
                    let bytes = tokenizer.token_bytes(t, true).unwrap_or(b"?");
                    String::from_utf8_lossy(bytes).into_owned()
                })
            })
            .collect();
        let text = pieces
            .iter()
            .map(|p| match p {
                Some(p) => p.as_str(),
                None => MASK_GLYPH_STR,
            })
            .collect();
        let committed = view
            .committed
            .iter()
            .filter_map(|&p| p.checked_sub(start))
            .collect();
        Self {
            step: view.step,
            total_steps: view.total_steps,
            block: view.block,
            num_blocks: view.num_blocks,
            masks: region.iter().filter(|&&t| is_mask(t)).count(),
            tokens: region.to_vec(),
            pieces,
            text,
            committed,
            confidences: view.confidences.to_vec(),
            draft: view.draft,
            mask_id,
        }
    }
}

/// A text's per-token log-likelihood values (`lacuna::likelihood::EchoLogprobs`): for every
/// split `c >= 1`, `sum(logprobs[c:])` is the LLaDA estimate of
/// `log p(tokens[c:] | tokens[:c])`.
#[pyclass(frozen, get_all, module = "lacuna")]
pub(crate) struct Score {
    /// The token ids scored.
    tokens: Vec<u32>,
    /// Each token's value in nats; None for token 0, which has nothing before it.
    logprobs: Vec<Option<f64>>,
    /// Per token, up to `logprobs` alternatives `(token, log-probability)`, best first.
    top: Vec<Vec<(u32, f64)>>,
    /// Whether each token's value came from exact enumerations only.
    exact: Vec<bool>,
    /// Forward passes it took.
    passes: usize,
}

#[pymethods]
impl Score {
    /// `sum(logprobs[start:])`: the estimate of `log p(tokens[start:] | tokens[:start])`.
    #[pyo3(signature = (start = 1))]
    fn log_likelihood(&self, start: usize) -> f64 {
        self.logprobs.iter().skip(start).flatten().sum()
    }

    fn __repr__(&self) -> String {
        format!(
            "Score(tokens=[{} ids], log_likelihood={}, passes={})",
            self.tokens.len(),
            self.log_likelihood(1),
            self.passes
        )
    }
}

impl Score {
    pub(crate) fn of(tokens: Vec<u32>, e: lacuna::likelihood::EchoLogprobs) -> Self {
        Self {
            tokens,
            logprobs: e.logprobs,
            top: e.top,
            exact: e.exact,
            passes: e.passes,
        }
    }
}
