//! The chat page served at `/`: one HTML file with inline CSS and JavaScript, compiled into
//! the binary (no build step, no external assets). It streams with
//! `stream_options.include_canvas` and draws each step's canvas: masks fade into tokens.

/// `page/index.html`.
pub(crate) const INDEX_HTML: &str = include_str!("page/index.html");
