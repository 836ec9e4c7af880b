//! The Python package `lacuna`: Lacuna's engine for diffusion language models, from Python.
//!
//! A thin layer over the `lacuna` crate: [`engine::Engine`] wraps a [`lacuna::SharedEngine`]
//! (one model, generations from several threads batched), keyword arguments map onto
//! [`lacuna::Settings`] by field name ([`settings`]), every Rust error becomes a Python
//! exception with its message unchanged ([`errors`]). Generations run on Rust threads with
//! the GIL released. Docs: docs/python.md.

// maturin builds with `cargo rustc`, which under the `test` profile compiles the library as
// a test harness: the wheel would hold an executable that Python cannot import. Fail the
// build with the fix instead (the crate has no Rust tests; clippy's test pass is let
// through).
#[cfg(all(test, not(clippy)))]
compile_error!(
    "lacuna-python is built as a test harness here: with maturin, use \
     MATURIN_PEP517_ARGS=\"--profile dev\" (the workspace's test settings), not \
     --profile test; the Python tests are bindings/python/tests (pytest)"
);

mod engine;
mod errors;
mod output;
mod settings;
mod stream;

use pyo3::prelude::*;

/// Lacuna: local inference for diffusion language models (LLaDA, Dream, LLaDA2, RND1) over
/// GGUF files. `Engine(path)` or `Engine.demo()` loads a model; `generate`, `chat`,
/// `infill` and `stream` run it.
#[pymodule]
#[pyo3(name = "lacuna")]
fn lacuna_python(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<engine::Engine>()?;
    m.add_class::<stream::Stream>()?;
    m.add_class::<output::Output>()?;
    m.add_class::<output::Stats>()?;
    m.add_class::<output::Timings>()?;
    m.add_class::<output::TokenLogprob>()?;
    m.add_class::<output::TopLogprob>()?;
    m.add_class::<output::InfillSearch>()?;
    m.add_class::<output::InfillCandidate>()?;
    m.add_class::<output::Canvas>()?;
    m.add_class::<output::Score>()?;
    m.add("LacunaError", py.get_type::<errors::LacunaError>())?;
    m.add("SettingsError", errors::settings_error_type(py)?)?;
    m.add("SETTINGS", settings::NAMES.to_vec())?;
    m.add("MASK_GLYPH", output::MASK_GLYPH.to_string())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // What `from lacuna import *` (and the package's `__init__.py`) takes.
    let all = [
        "Engine",
        "Stream",
        "Output",
        "Stats",
        "Timings",
        "TokenLogprob",
        "TopLogprob",
        "InfillSearch",
        "InfillCandidate",
        "Canvas",
        "Score",
        "LacunaError",
        "SettingsError",
        "SETTINGS",
        "MASK_GLYPH",
        "__version__",
    ];
    m.add("__all__", all.to_vec())?;
    Ok(())
}
