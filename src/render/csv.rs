//! CSV helpers shared by every CSV output (orphans, the dashboard's release drift), and the
//! release drift CSV: one row per drifted field (a release with none still has one row).

use std::io::{self, Write};

use crate::report::DriftReport;

/// One CSV cell: RFC 4180 quoting, and a cell that a spreadsheet would run as a formula
/// (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) is prefixed with `'`.
pub fn cell(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{s}") } else { s.to_string() };
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s }
}

/// `cells` after a first cell naming `cluster`, when there is one.
pub fn with_cluster<S: AsRef<str>>(cluster: Option<&str>, cells: &[S]) -> Vec<String> {
    cluster.into_iter().map(str::to_string).chain(cells.iter().map(|c| c.as_ref().to_string())).collect()
}

/// One CSV line from its cells.
pub fn line<S: AsRef<str>>(cells: &[S]) -> String {
    cells.iter().map(|c| cell(c.as_ref())).collect::<Vec<_>>().join(",")
}

const RELEASE_HEADER: [&str; 14] = [
    "namespace",
    "release",
    "chart",
    "chart_version",
    "status",
    "helm_status",
    "kind",
    "object_namespace",
    "object",
    "state",
    "path",
    "change",
    "desired",
    "live",
];

/// Release drift as CSV: one row per field of each drifted object (text values as they are, others
/// as compact JSON, with
/// the same redaction as every output), one row per object without fields, one row per release
/// without objects. The last column is the field's manager.
pub fn releases<W: Write>(out: &mut W, report: &DriftReport) -> io::Result<()> {
    writeln!(out, "{},manager", line(&RELEASE_HEADER))?;
    // Text as it is (a spreadsheet shows it as text), anything else as compact JSON.
    let json = |v: &Option<serde_json::Value>| match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    for r in &report.releases {
        let status =
            serde_json::to_value(r.status).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let head = [
            r.origin.namespace.clone(),
            r.origin.name.clone(),
            r.origin.chart.clone(),
            r.origin.chart_version.clone(),
            status,
            r.origin.helm_status.clone().unwrap_or_default(),
        ];
        if r.objects.is_empty() {
            let mut row: Vec<String> = head.to_vec();
            row.extend(std::iter::repeat_n(String::new(), 9));
            writeln!(out, "{}", line(&row))?;
        }
        for o in &r.objects {
            let state =
                serde_json::to_value(o.state).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            let obj = [o.kind.clone(), o.namespace.clone().unwrap_or_default(), o.name.clone(), state];
            if o.fields.is_empty() {
                let mut row: Vec<String> = head.iter().chain(obj.iter()).cloned().collect();
                row.extend(std::iter::repeat_n(String::new(), 5));
                writeln!(out, "{}", line(&row))?;
            }
            for f in &o.fields {
                let change = serde_json::to_value(f.change)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                let mut row: Vec<String> = head.iter().chain(obj.iter()).cloned().collect();
                row.extend([
                    f.path.to_string(),
                    change,
                    json(&f.desired),
                    json(&f.live),
                    f.manager.clone().unwrap_or_default(),
                ]);
                writeln!(out, "{}", line(&row))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_cells_are_defused_and_quoted() {
        assert_eq!(cell("=cmd|' /C calc'!A0"), "'=cmd|' /C calc'!A0");
        assert_eq!(cell("+1"), "'+1");
        assert_eq!(cell("-x"), "'-x");
        assert_eq!(cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("=a,\"b\""), "\"'=a,\"\"b\"\"\"");
        assert_eq!(cell("plain"), "plain");
        assert_eq!(line(&["a", "=b"]), "a,'=b");
    }
}
