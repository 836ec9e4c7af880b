//! Typed errors: bad settings ([`ConfigError`]) and failures while generating ([`Error`]).

/// A sampler setting that cannot work, found before any denoiser call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `gen_length` is zero.
    #[error("gen_length must be at least 1")]
    ZeroGenLength,
    /// `steps` is zero.
    #[error("steps must be at least 1")]
    ZeroSteps,
    /// `block_length` is zero.
    #[error("block_length must be at least 1")]
    ZeroBlockLength,
    /// `gen_length` is not a multiple of `block_length`.
    #[error("gen_length {gen_length} is not a multiple of block_length {block_length}")]
    GenLengthNotMultipleOfBlock {
        /// The requested generation length.
        gen_length: usize,
        /// The requested block length.
        block_length: usize,
    },
    /// `steps` is not a multiple of the number of blocks.
    #[error("steps {steps} is not a multiple of the number of blocks {blocks}")]
    StepsNotMultipleOfBlocks {
        /// The requested number of steps.
        steps: usize,
        /// `gen_length / block_length`.
        blocks: usize,
    },
    /// No mask token id was given (the model's metadata lacks one).
    #[error("no mask token id: the sampler needs the model's [MASK] token")]
    MissingMaskId,
    /// The denoiser reports an empty vocabulary.
    #[error("the denoiser reports a vocabulary of size 0")]
    EmptyVocab,
    /// A setting is NaN, infinite or outside its range.
    #[error("{name} = {value} is out of range: {expected}")]
    OutOfRange {
        /// The setting's name, e.g. `temperature`.
        name: &'static str,
        /// The value given.
        value: f64,
        /// The accepted range, in words.
        expected: &'static str,
    },
    /// `top_k` is zero.
    #[error("top_k must be at least 1 (use None to disable it)")]
    ZeroTopK,
    /// A block length was given to a sampler whose exact schedule has no blocks.
    #[error("Dream's official sampler has no blocks: block_length needs the parallel mode")]
    BlockLengthWithoutParallel,
    /// A cache policy was combined with classifier-free guidance, whose unconditional pass
    /// runs on another canvas (Fast-dLLM's cached samplers have no CFG either).
    #[error("cache policy '{policy}' cannot be combined with cfg_scale > 0 (use cache none)")]
    CacheWithCfg {
        /// The policy asked for.
        policy: &'static str,
    },
    /// A cache policy was asked of a denoiser that keeps no cache.
    #[error("cache policy '{policy}' needs a model with a key/value cache; this one has none")]
    CacheUnsupported {
        /// The policy asked for.
        policy: &'static str,
    },
    /// An infill suffix given to a sampler whose model cannot see it.
    #[error(
        "{sampler} cannot infill: its attention is block-causal, so the masks between prefix \
         and suffix never see the suffix"
    )]
    InfillUnsupported {
        /// The sampler that refuses it.
        sampler: &'static str,
    },
    /// The constraint's language has no word that fits the generated region.
    #[error(
        "no output of {gen_length} tokens can satisfy the constraint (its shortest answer is \
         longer, or it needs an end token the region has no room for)"
    )]
    ConstraintUnsatisfiable {
        /// The region's length.
        gen_length: usize,
    },
    /// RND1's shifted logits predict each position from the one before it: position 0 has no
    /// predictor, so the prompt must not be empty.
    #[error("RND1's sampler needs a non-empty prompt (position i is predicted by row i - 1)")]
    EmptyPrompt,
    /// A cache policy was asked of Dream's official sampler, which has no blocks to refresh
    /// the cache at (Fast-dLLM caches Dream only in its block-wise parallel mode).
    #[error("cache policy '{policy}' needs Dream's block-wise parallel mode (e.g. a threshold)")]
    CacheNeedsBlocks {
        /// The policy asked for.
        policy: &'static str,
    },
}

/// Why a generation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error<E> {
    /// A bad setting.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The denoiser (the model) failed.
    #[error("the denoiser failed")]
    Denoiser(#[source] E),
    /// The denoiser returned NaN or +inf.
    #[error("the denoiser returned logit {value} for token {token} at canvas row {row}")]
    InvalidLogit {
        /// The canvas row (model output position) whose logits were requested.
        row: usize,
        /// The token index within the row.
        token: usize,
        /// The offending value.
        value: f32,
    },
    /// The denoiser returned a row whose logits are all -inf.
    #[error("the denoiser returned only -inf logits at canvas row {row}")]
    NoFiniteLogit {
        /// The canvas row.
        row: usize,
    },
    /// Parallel decoding stopped making progress: every committed token was the mask token,
    /// so the block never empties (the official loop would spin forever).
    #[error("parallel decoding made no progress in block {block}: only mask tokens were predicted")]
    Stalled {
        /// The block index.
        block: usize,
    },
}

impl<E> Error<E> {
    /// Splits off the denoiser's own error: `Ok(e)` for [`Error::Denoiser`], otherwise the
    /// sampler's error, which then holds no denoiser error.
    pub fn into_denoiser(self) -> Result<E, Error<std::convert::Infallible>> {
        match self {
            Error::Denoiser(e) => Ok(e),
            Error::Config(c) => Err(Error::Config(c)),
            Error::InvalidLogit { row, token, value } => {
                Err(Error::InvalidLogit { row, token, value })
            }
            Error::NoFiniteLogit { row } => Err(Error::NoFiniteLogit { row }),
            Error::Stalled { block } => Err(Error::Stalled { block }),
        }
    }
}
