//! Running the built `lacuna` binary, shared by the CLI tests.

#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs `lacuna args…` (without the caller's `RUST_LOG`) to completion.
pub(crate) fn lacuna(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lacuna"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

/// The process's stderr, lossily decoded.
pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
