//! Rendering reports: coloured text, JSON and YAML. Renderers only format data they are given
//! and write to any `io::Write`, so tests render into a `Vec<u8>`.

pub mod text;
pub mod theme;

use std::io::Write;

use serde::Serialize;

pub use theme::Theme;

/// Write `value` as pretty JSON followed by a newline.
pub fn json<W: Write, T: Serialize>(out: &mut W, value: &T) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(std::io::Error::other)?;
    writeln!(out)
}

/// Write `value` as YAML (the same data as JSON).
pub fn yaml<W: Write, T: Serialize>(out: &mut W, value: &T) -> std::io::Result<()> {
    let text = serde_saphyr::to_string(value).map_err(|e| std::io::Error::other(e.to_string()))?;
    out.write_all(text.as_bytes())
}
