//! `lacuna pull`: a GGUF from the Hugging Face Hub into its cache; and the resolver that
//! lets every `-m` take an `hf:OWNER/REPO:QUANT` reference instead of a path.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};
use lacuna_hub::{Hub, ModelRef};

/// Arguments of `lacuna pull`.
#[derive(clap::Args)]
pub(crate) struct PullArgs {
    /// OWNER/REPO:QUANT (a quant such as Q4_K_M, matched in the repository's .gguf file
    /// names), OWNER/REPO/FILE.gguf, or OWNER/REPO when it has one .gguf file. Honours
    /// HF_ENDPOINT, HF_HOME, HF_TOKEN and HF_HUB_OFFLINE.
    reference: String,
}

/// Downloads (or finds) the file and prints its path.
pub(crate) fn run(a: PullArgs) -> Result<()> {
    let reference = ModelRef::parse(&a.reference).map_err(flat)?;
    let path = Hub::from_env()
        .and_then(|h| h.pull(&reference))
        .map_err(flat)?;
    println!("{}", path.display());
    Ok(())
}

/// `model` itself, or for `hf:OWNER/REPO:QUANT` / `hf:OWNER/REPO/FILE.gguf` the file in the
/// Hugging Face cache: no network when it is cached, else downloaded with a progress bar
/// (an error naming `lacuna pull …` when HF_HUB_OFFLINE is set).
pub(crate) fn resolve_model(model: &Path) -> Result<PathBuf> {
    let Some(reference) = model.to_str().and_then(ModelRef::from_hf_arg) else {
        return Ok(model.to_path_buf());
    };
    let reference = reference.map_err(flat)?;
    Hub::from_env()
        .and_then(|h| h.resolve(&reference))
        .map_err(flat)
}

/// A hub error as one line: its message already names its cause.
fn flat(e: lacuna_hub::Error) -> anyhow::Error {
    anyhow!("{e}")
}
