//! Rendering reports: coloured text, JSON and YAML, the CI formats (JUnit, SARIF, GitHub
//! annotations: `ci`, `junit`, `sarif`, `github`), and the line diffs of multi-line values
//! (`diff`) that the text output and the dashboard share. Renderers only format data they are
//! given and write to any `io::Write`, so tests render into a `Vec<u8>`.

pub mod adopt;
pub mod ci;
pub mod csv;
pub mod diff;
pub mod envdiff;
pub mod github;
pub mod history;
pub mod junit;
pub mod orphans;
pub mod orphans_script;
pub mod sarif;
pub mod text;
pub mod theme;
pub mod upgrade;
pub mod versions;

use std::io::Write;

use serde::Serialize;

pub use theme::Theme;

/// `rows` under `header` as an aligned table: every column but the last padded to its widest cell,
/// two spaces between columns, the header in the theme's heading style; `paint(row, cell)` styles
/// each row's cell in column `painted` (its padding included, so colour codes never shift a column).
pub(crate) fn aligned<W: Write>(
    out: &mut W,
    header: &[String],
    rows: &[Vec<String>],
    painted: usize,
    paint: impl Fn(usize, &str) -> String,
    theme: &Theme,
) -> std::io::Result<()> {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let last = header.len().saturating_sub(1);
    let line = |cols: &[String], row: Option<usize>| {
        let mut s = String::new();
        for (i, c) in cols.iter().enumerate() {
            let padded = if i == last { c.clone() } else { format!("{c:<w$}  ", w = width[i]) };
            match row {
                Some(r) if i == painted => s.push_str(&paint(r, &padded)),
                _ => s.push_str(&padded),
            }
        }
        s.trim_end().to_string()
    };
    writeln!(out, "{}", theme.heading(&line(header, None)))?;
    for (i, r) in rows.iter().enumerate() {
        writeln!(out, "{}", line(r, Some(i)))?;
    }
    Ok(())
}

/// A table row: its cells and the style of its painted cell.
pub(crate) type Row<S> = (Vec<String>, S);

/// One kind of table (orphans, versions) as [`across`] writes it for one or several clusters.
pub(crate) struct TableKind<'a, R, S> {
    /// Column titles.
    pub header: &'a [&'a str],
    /// The column whose cell is painted by the row's style.
    pub painted: usize,
    /// What an empty table says.
    pub empty: &'a str,
    /// A report's rows: each row's cells and its style.
    pub rows: fn(&R) -> Vec<Row<S>>,
    /// A row's painted cell.
    pub paint: fn(S, &str, &Theme) -> String,
    /// A report's summary lines, each after the given `cluster NAME: ` (or nothing).
    pub summary: fn(&mut dyn Write, &R, &Theme, &str) -> std::io::Result<()>,
}

/// Several clusters' reports (or why a cluster could not be read) in one table, with a first
/// CLUSTER column, then each cluster's summary named `cluster NAME: ` (or its error). One cluster
/// (named `""`): its table without the column, then its summary.
pub(crate) fn across<W: Write, R, S: Copy>(
    out: &mut W,
    kind: &TableKind<'_, R, S>,
    clusters: &[(&str, Result<&R, &str>)],
    theme: &Theme,
) -> std::io::Result<()> {
    let many = clusters.len() > 1;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut styles: Vec<S> = Vec::new();
    for (cluster, report) in clusters {
        for (cells, style) in report.iter().flat_map(|r| (kind.rows)(r)) {
            rows.push(if many { std::iter::once(cluster.to_string()).chain(cells).collect() } else { cells });
            styles.push(style);
        }
    }
    if rows.is_empty() {
        writeln!(out, "{}", kind.empty)?;
    } else {
        let header: Vec<String> =
            many.then_some("CLUSTER").into_iter().chain(kind.header.iter().copied()).map(str::to_string).collect();
        let painted = kind.painted + usize::from(many);
        aligned(out, &header, &rows, painted, |r, cell| (kind.paint)(styles[r], cell, theme), theme)?;
    }
    for (cluster, report) in clusters {
        let named = if many { format!("cluster {cluster}: ") } else { String::new() };
        match report {
            Ok(report) => (kind.summary)(out, report, theme, &named)?,
            Err(e) => writeln!(out, "{}", theme.error(&format!("{named}error: {e}")))?,
        }
    }
    Ok(())
}

/// Write `value` as pretty JSON followed by a newline.
pub fn json<W: Write, T: Serialize>(out: &mut W, value: &T) -> std::io::Result<()> {
    // serde_json's own conversion keeps a write error's kind (a closed pipe stays BrokenPipe, which
    // the app exits quietly on); `io::Error::other` made it Other.
    serde_json::to_writer_pretty(&mut *out, value).map_err(std::io::Error::from)?;
    writeln!(out)
}

/// Write completion candidates in the protocol kubectl and Helm relay to the shell (Cobra's):
/// one `value` or `value<TAB>description` per line, then `:<directive>`.
pub fn completion<W: Write>(out: &mut W, completion: &crate::report::completion::Completion) -> std::io::Result<()> {
    for c in &completion.candidates {
        if c.description.is_empty() {
            writeln!(out, "{}", c.value)?;
        } else {
            writeln!(out, "{}\t{}", c.value, c.description)?;
        }
    }
    writeln!(out, ":{}", completion.directive as u8)
}

/// Write `documents` as one YAML stream, `---` between them, after `header` as comment lines (what
/// `kubectl apply -f -` and kustomize read).
pub fn yaml_stream<W: Write, T: Serialize>(out: &mut W, header: &[String], documents: &[T]) -> std::io::Result<()> {
    for line in header {
        writeln!(out, "# {line}")?;
    }
    for (i, d) in documents.iter().enumerate() {
        if i > 0 {
            writeln!(out, "---")?;
        }
        yaml(out, d)?;
    }
    Ok(())
}

/// Write `value` as YAML (the same data as JSON).
pub fn yaml<W: Write, T: Serialize>(out: &mut W, value: &T) -> std::io::Result<()> {
    let text = serde_saphyr::to_string(value).map_err(|e| std::io::Error::other(e.to_string()))?;
    out.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use crate::report::completion::{Candidate, Completion, Directive};

    #[test]
    fn completion_protocol() {
        let c = Completion {
            candidates: vec![
                Candidate { value: "release".into(), description: "Drift of Helm releases".into() },
                Candidate { value: "shop".into(), description: String::new() },
            ],
            directive: Directive::NoFileComp,
        };
        let mut out = Vec::new();
        super::completion(&mut out, &c).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "release\tDrift of Helm releases\nshop\n:4\n");
    }
}
