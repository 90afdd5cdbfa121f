//! Line diffs of multi-line values: the one computation behind the text output's unified diffs
//! and the dashboard's (`serve` sends these lines in its releases JSON). The `similar` crate's
//! unified diff with [`CONTEXT_RADIUS`] lines of context, desired as the old side and live as the
//! new; each line comes with its kind, and each renderer styles the kinds its own way.

use serde::Serialize;
use serde_json::Value;

use crate::report::FieldReport;
use crate::report::field::Change;

/// Unchanged lines shown around each change.
pub const CONTEXT_RADIUS: usize = 2;

/// What one line of a diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum LineKind {
    /// `--- desired` or `+++ live`, before the first hunk.
    Header,
    /// A hunk's ranges: `@@ -3,5 +3,5 @@`.
    Hunk,
    /// A line both sides have: ` text`.
    Context,
    /// A line only the desired value has: `-text`.
    Removed,
    /// A line only the live value has: `+text`.
    Added,
    /// `\ No newline at end of file`, after the last line of a side that does not end with one.
    NoNewline,
}

/// One line of a diff, as the text output prints it (its sign included, no line ending).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    pub kind: LineKind,
    pub text: String,
}

/// The unified diff of two texts, line by line; empty when they are equal.
pub fn lines(desired: &str, live: &str) -> Vec<DiffLine> {
    let diff = similar::TextDiff::from_lines(desired, live);
    let mut unified = diff.unified_diff();
    unified.context_radius(CONTEXT_RADIUS);
    let mut out = Vec::new();
    let line = |kind, text: String| DiffLine { kind, text };
    for hunk in unified.iter_hunks() {
        let changes: Vec<_> = hunk.iter_changes().collect();
        if changes.is_empty() {
            continue;
        }
        if out.is_empty() {
            out.push(line(LineKind::Header, "--- desired".into()));
            out.push(line(LineKind::Header, "+++ live".into()));
        }
        out.push(line(LineKind::Hunk, hunk.header().to_string()));
        for change in changes {
            let (kind, sign) = match change.tag() {
                similar::ChangeTag::Equal => (LineKind::Context, ' '),
                similar::ChangeTag::Delete => (LineKind::Removed, '-'),
                similar::ChangeTag::Insert => (LineKind::Added, '+'),
            };
            let value = change.value();
            let value = value.strip_suffix('\n').unwrap_or(value);
            let value = value.strip_suffix('\r').unwrap_or(value);
            out.push(line(kind, format!("{sign}{value}")));
            if change.missing_newline() {
                out.push(line(LineKind::NoNewline, "\\ No newline at end of file".into()));
            }
        }
    }
    out
}

/// The desired and live texts of a field that is shown as a line diff: a difference (not
/// ignored) between two strings, at least one of them multi-line. Secret values are redacted
/// when the report is built (one line each), so a Secret's field is never one of these unless
/// `--show-secrets` was given.
pub fn texts(f: &FieldReport) -> Option<(&str, &str)> {
    if f.reason.is_some() || f.change != Change::Changed {
        return None;
    }
    match (&f.desired, &f.live) {
        (Some(Value::String(d)), Some(Value::String(l))) if d.contains('\n') || l.contains('\n') => Some((d, l)),
        _ => None,
    }
}

/// The line diff of a field, when it is shown as one ([`texts`]).
pub fn field_lines(f: &FieldReport) -> Option<Vec<DiffLine>> {
    texts(f).map(|(d, l)| lines(d, l))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The text of each line, as `similar` writes the whole diff (what the CLI printed before
    /// the lines had kinds).
    fn similar_text(desired: &str, live: &str) -> Vec<String> {
        let diff = similar::TextDiff::from_lines(desired, live);
        let text = diff.unified_diff().context_radius(CONTEXT_RADIUS).header("desired", "live").to_string();
        text.lines().map(str::to_string).collect()
    }

    fn texts_of(v: &[DiffLine]) -> Vec<String> {
        v.iter().map(|l| l.text.clone()).collect()
    }

    const CONFIG: &str =
        "server:\n  port: 8080\n  timeout: 30s\nfeatures:\n  search: true\n  checkout: true\nlogLevel: info\n";

    #[test]
    fn a_changed_line_with_its_context() {
        let live = CONFIG.replace("timeout: 30s", "timeout: 120s");
        let got = lines(CONFIG, &live);
        let kinds: Vec<LineKind> = got.iter().map(|l| l.kind).collect();
        use LineKind::*;
        assert_eq!(kinds, [Header, Header, Hunk, Context, Context, Removed, Added, Context, Context]);
        assert_eq!(
            texts_of(&got),
            [
                "--- desired",
                "+++ live",
                "@@ -1,5 +1,5 @@",
                " server:",
                "   port: 8080",
                "-  timeout: 30s",
                "+  timeout: 120s",
                " features:",
                "   search: true",
            ]
        );
    }

    #[test]
    fn equal_texts_have_no_lines() {
        assert!(lines(CONFIG, CONFIG).is_empty());
        assert!(lines("", "").is_empty());
    }

    #[test]
    fn the_same_lines_as_similar_writes_them() {
        let long: String = (1..=200).map(|i| format!("key{i}: value {i}\n")).collect();
        let cases: Vec<(String, String)> = vec![
            (CONFIG.into(), CONFIG.replace("timeout: 30s", "timeout: 120s")),
            // Two hunks far apart in a long value, and one near the start.
            (long.clone(), long.replace("value 3\n", "value three\n").replace("value 150\n", "value 150!\n")),
            // Lines added and removed at the ends.
            (long.clone(), format!("first\n{}", &long[..long.len() - 20])),
            // No newline at the end of one side, of both, of neither.
            ("a\nb\nc".into(), "a\nb\nc\n".into()),
            ("a\nb\nc".into(), "a\nB\nc".into()),
            ("a\nb".into(), "a\nb\nc".into()),
            // Windows line endings, empty lines, lines of signs.
            ("a\r\nb\r\n".into(), "a\r\nc\r\n".into()),
            ("\n\n\nq\n".into(), "\n\nq\n".into()),
            ("-- comment\n+++ plus\n@@ at\n".into(), "--- comment\n++ plus\n@@ at\n".into()),
            // One side empty.
            (String::new(), "a\nb\n".into()),
            ("a\nb\n".into(), String::new()),
            // Unicode.
            ("grüße: ja\nπ: 3.14\n".into(), "grüße: nein\nπ: 3.14\n".into()),
        ];
        for (d, l) in cases {
            assert_eq!(texts_of(&lines(&d, &l)), similar_text(&d, &l), "desired {d:?} live {l:?}");
        }
    }

    /// `similar` splits lines at a lone carriage return too. Its whole text kept that `\r`
    /// inside one printed line (` x\r y`: a terminal overwrote the start of the line); the lines
    /// here end there, so each is printed on its own.
    #[test]
    fn a_lone_carriage_return_ends_a_line() {
        assert_eq!(similar_text("x\ry\nz\n", "x\ry\nZ\n")[3], " x\r y");
        assert_eq!(
            texts_of(&lines("x\ry\nz\n", "x\ry\nZ\n")),
            ["--- desired", "+++ live", "@@ -1,3 +1,3 @@", " x", " y", "-z", "+Z"]
        );
        assert!(lines("a\rb", "a\rc").iter().all(|l| !l.text.contains('\r')));
    }

    #[test]
    fn kinds_follow_the_sign_of_each_line() {
        let got = lines("-- a\n+++ b\nkeep\n", "--- a\n++ b\nkeep\n");
        for l in &got[2..] {
            let want = match l.kind {
                LineKind::Hunk => "@@",
                LineKind::Context => " ",
                LineKind::Removed => "-",
                LineKind::Added => "+",
                LineKind::Header | LineKind::NoNewline => panic!("unexpected {l:?}"),
            };
            assert!(l.text.starts_with(want), "{l:?}");
        }
        // A removed line that starts with "--" is a removed line, not a header.
        assert!(got.contains(&DiffLine { kind: LineKind::Removed, text: "--- a".into() }));
        assert!(got.contains(&DiffLine { kind: LineKind::Added, text: "+--- a".into() }));
    }

    fn field(change: Change, desired: Option<Value>, live: Option<Value>) -> FieldReport {
        FieldReport {
            history: None,
            path: r#"data["app.yaml"]"#.parse().unwrap(),
            change,
            desired,
            live,
            manager: None,
            time: None,
            reason: None,
            from_revision: None,
            admission: None,
        }
    }

    #[test]
    fn which_fields_are_line_diffs() {
        let multi = field(Change::Changed, Some(json!("a\nb\n")), Some(json!("a\nc\n")));
        assert_eq!(texts(&multi), Some(("a\nb\n", "a\nc\n")));
        assert_eq!(field_lines(&multi).unwrap().len(), 6);
        // One side multi-line is enough.
        assert!(texts(&field(Change::Changed, Some(json!("a")), Some(json!("a\nb")))).is_some());
        // Single-line strings, other values, additions, removals and ignored fields are not.
        assert!(texts(&field(Change::Changed, Some(json!("a")), Some(json!("b")))).is_none());
        assert!(texts(&field(Change::Changed, Some(json!({"a": "x\ny"})), Some(json!("x\ny")))).is_none());
        assert!(texts(&field(Change::Added, None, Some(json!("a\nb")))).is_none());
        assert!(texts(&field(Change::Removed, Some(json!("a\nb")), None)).is_none());
        let mut ignored = multi.clone();
        ignored.reason = Some("ignore rule".into());
        assert!(field_lines(&ignored).is_none());
    }

    #[test]
    fn a_redacted_secret_value_is_no_line_diff() {
        use crate::report::field::Drift;
        use crate::report::path::FieldPath;
        let drift = Drift {
            path: "stringData[\"config.ini\"]".parse::<FieldPath>().unwrap(),
            change: Change::Changed,
            desired: Some(json!("user = app\npassword = first-SECRET\n")),
            live: Some(json!("user = app\npassword = second-SECRET\n")),
            owner: None,
            ignored: None,
        };
        let hidden = crate::report::field_report("Secret", &drift, false);
        assert!(field_lines(&hidden).is_none());
        assert!(!serde_json::to_string(&hidden).unwrap().contains("SECRET"));
        // With --show-secrets the CLI shows the lines.
        let shown = crate::report::field_report("Secret", &drift, true);
        assert!(field_lines(&shown).unwrap().iter().any(|l| l.text == "+password = second-SECRET"));
    }
}
