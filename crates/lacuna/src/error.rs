//! The one error type of the embedding API.

use lacuna_models::Arch;

/// Everything that can go wrong loading a model or generating with it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The model file is not a valid GGUF file (an unreadable file is [`Error::Gguf`],
    /// whose message names the path).
    #[error("{path} is not a valid GGUF file: {source}")]
    Open {
        /// The path given.
        path: String,
        /// The underlying error.
        #[source]
        source: lacuna_gguf::Error,
    },
    /// The GGUF container is malformed (or a metadata key is missing or mistyped).
    #[error(transparent)]
    Gguf(#[from] lacuna_gguf::Error),
    /// The model could not be built from the file, or its forward pass failed.
    #[error(transparent)]
    Model(#[from] lacuna_models::Error),
    /// The tokenizer could not be built, or encoding/decoding/chat templating failed.
    #[error(transparent)]
    Tokenizer(#[from] lacuna_tokenizer::Error),
    /// A sampler setting that cannot work (gen_length not a multiple of block_length, ...).
    #[error(transparent)]
    Config(#[from] lacuna_sampler::ConfigError),
    /// A structured-output constraint that cannot be compiled or satisfied (a keyword the
    /// compiler does not support, a grammar that is not regular, a schema whose shortest
    /// answer does not fit the tokens asked for, a constraint over the compile budget).
    #[error("{0}")]
    Constraint(#[from] lacuna_structured::Error),
    /// Settings that cannot be combined (a parallel rule without parallel decoding, the
    /// fast preset with guidance, ...), found before the model is asked.
    #[error(transparent)]
    Settings(#[from] crate::SettingsError),
    /// The sampler failed while generating (invalid logits, stalled parallel decoding).
    #[error("generation failed: {0}")]
    Sampler(lacuna_sampler::Error<std::convert::Infallible>),
    /// The generation was cancelled ([`CancelToken::cancel`](crate::CancelToken::cancel)).
    #[error("the generation was cancelled")]
    Cancelled,
    /// Another generation's pass in the same batched forward made the forward itself fail
    /// (the backend: out of memory, a device error); that generation reports the cause.
    #[error("a batched forward pass failed: {detail}")]
    BatchFailed {
        /// The failure's message.
        detail: String,
    },
    /// The model names no mask token (`tokenizer.ggml.mask_token_id`), and its architecture
    /// has no default one inside the vocabulary.
    #[error(
        "the model has no mask token (tokenizer.ggml.mask_token_id is absent and the {arch} default is not in the vocabulary)"
    )]
    NoMaskToken {
        /// The model's architecture.
        arch: Arch,
    },
    /// The tokenizer's vocabulary and the model's logits disagree in size.
    #[error("the tokenizer has {tokenizer} tokens but the model has {model} logits per row")]
    VocabMismatch {
        /// Tokens in `tokenizer.ggml.tokens`.
        tokenizer: usize,
        /// The model's vocabulary size.
        model: usize,
    },
    /// The prompt plus the canvas does not fit in the model's context.
    #[error(
        "prompt ({prompt} tokens) + gen_length ({gen_length}) = {total} tokens exceeds the model's context length {context}"
    )]
    ContextOverflow {
        /// Prompt tokens.
        prompt: usize,
        /// Requested generation length.
        gen_length: usize,
        /// Their sum.
        total: usize,
        /// The model's context length.
        context: usize,
    },
    /// An infill request whose prompt, middle and suffix do not fit in the context.
    #[error(
        "prompt ({prompt} tokens) + gen_length ({gen_length}) + suffix ({suffix} tokens) = {total} tokens exceeds the model's context length {context}"
    )]
    InfillContextOverflow {
        /// Prompt tokens.
        prompt: usize,
        /// Requested middle length.
        gen_length: usize,
        /// Suffix tokens.
        suffix: usize,
        /// Their sum.
        total: usize,
        /// The model's context length.
        context: usize,
    },
    /// Infilling asked of a model that cannot see a suffix.
    #[error(
        "{arch} cannot infill (suffix): its attention is block-causal, so the positions between prompt and suffix never see the suffix; use a bidirectional model (LLaDA, LLaDA-MoE, Dream, RND1)"
    )]
    InfillUnsupported {
        /// The model's architecture.
        arch: lacuna_models::Arch,
    },
    /// An infill length search ([`GenerateRequest::infill_lengths`](crate::GenerateRequest::infill_lengths))
    /// without a suffix to fill before: there is no middle to search.
    #[error(
        "infill_lengths needs a suffix: the lengths searched are those of the middle between prompt and suffix"
    )]
    InfillLengthsWithoutSuffix,
    /// More candidate lengths than an infill length search tries.
    #[error(
        "infill_lengths gives {given} lengths; at most {max} are searched (each is a whole generation)"
    )]
    TooManyInfillLengths {
        /// Lengths given (after removing repeats).
        given: usize,
        /// The most searched ([`crate::infill::MAX_INFILL_LENGTHS`]).
        max: usize,
    },
    /// A setting that the model's sampler does not have (e.g. `top_p` for LLaDA).
    #[error("{setting} is not a setting of the {arch} sampler (it belongs to {belongs_to})")]
    UnsupportedSetting {
        /// The setting's name.
        setting: &'static str,
        /// The model's architecture.
        arch: Arch,
        /// Which sampler has it.
        belongs_to: &'static str,
    },
    /// A prompt given as token ids holds an id outside the vocabulary.
    #[error("prompt token {token} at position {position} is outside the vocabulary (size {vocab})")]
    PromptToken {
        /// The id.
        token: u32,
        /// Its position in the prompt.
        position: usize,
        /// The vocabulary size.
        vocab: usize,
    },
    /// A chat prompt with no messages.
    #[error("the chat prompt has no messages")]
    EmptyChat,
    /// The worker thread pool could not be started.
    #[error("cannot start {threads} worker threads: {source}")]
    ThreadPool {
        /// Threads requested.
        threads: usize,
        /// The underlying error.
        #[source]
        source: rayon::ThreadPoolBuildError,
    },
    /// Zero threads were requested.
    #[error("threads must be at least 1")]
    ZeroThreads,
    /// Scoring text ([`crate::likelihood`]) asked of a model that is not a masked model.
    #[error("{arch} models do not score text: log-likelihoods need a masked diffusion model")]
    LikelihoodUnsupported {
        /// The architecture's name.
        arch: &'static str,
    },
    /// A likelihood sample count outside 1..=max.
    #[error("likelihood_samples must be between 1 and {max}, got {samples}")]
    LikelihoodSamples {
        /// What was asked.
        samples: usize,
        /// The most allowed.
        max: usize,
    },
    /// Scoring that would take more forward passes than allowed.
    #[error(
        "scoring {tokens} tokens with {samples} samples per estimate takes {passes} forward passes, more than the {max} allowed: score a shorter text or fewer likelihood_samples"
    )]
    LikelihoodTooCostly {
        /// Tokens to score.
        tokens: usize,
        /// Samples per estimate.
        samples: usize,
        /// Passes it would take.
        passes: usize,
        /// The most allowed.
        max: usize,
    },
    /// Nothing to score.
    #[error("the text to score is empty")]
    LikelihoodEmpty,
}

impl From<lacuna_sampler::Error<lacuna_models::Error>> for Error {
    fn from(e: lacuna_sampler::Error<lacuna_models::Error>) -> Self {
        match e.into_denoiser() {
            Ok(m) => Error::Model(m),
            Err(s) => s.into(),
        }
    }
}

impl From<lacuna_sampler::Error<std::convert::Infallible>> for Error {
    fn from(e: lacuna_sampler::Error<std::convert::Infallible>) -> Self {
        match e {
            lacuna_sampler::Error::Config(c) => Error::Config(c),
            other => Error::Sampler(other),
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
