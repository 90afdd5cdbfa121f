//! The compare report (`compare`) as text, two columns (split) or one (unified), and as CSV. JSON
//! and YAML are the report serialised ([`crate::render::json`]). Ignored differences are counted
//! in the text and listed, marked, in CSV (as in JSON).

use std::io::{self, Write};

use serde_json::Value;

use super::Theme;
use super::csv::line;
use super::text::inline_value;
use crate::report::envdiff::{
    Cause, CompareReport, CompareSide, CompareStatus, FieldDifference, ObjectDifference, Presence, ValueDifference,
};

/// How the text lays out each difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A table: path, left, right, cause.
    Split,
    /// Each difference, then a left and a right line under it.
    Unified,
}

fn shown(v: &Option<Value>) -> String {
    v.as_ref().map(inline_value).unwrap_or_else(|| "(not set)".to_string())
}

fn side_title(s: &CompareSide) -> String {
    format!("{}/{}", s.cluster, s.namespace)
}

fn side_line(s: &CompareSide, release: &str) -> String {
    if !s.found {
        return match &s.error {
            Some(e) => format!("could not be read: {e}"),
            None => format!("release {release} is not deployed here"),
        };
    }
    let mut parts = vec![match s.release.is_empty() {
        true => "manifests".to_string(),
        false => format!("release {}", s.release),
    }];
    if let Some(r) = s.revision {
        parts.push(format!("revision {r}"));
    }
    if let (Some(c), Some(v)) = (&s.chart, &s.chart_version) {
        parts.push(format!("chart {c}-{v}"));
    }
    if let Some(a) = &s.app_version {
        parts.push(format!("app {a}"));
    }
    if let Some(h) = &s.helm_status {
        parts.push(h.clone());
    }
    if let Some(d) = s.drift {
        parts.push(format!("drift: {}", d.name()));
    }
    let mut text = parts.join(", ");
    if let Some(e) = &s.error {
        text.push_str(&format!("; incomplete: {e}"));
    }
    text
}

fn cause_text(f: &FieldDifference) -> String {
    let by = |m: &Option<String>| m.as_ref().map(|m| format!(" by {m}")).unwrap_or_default();
    let mut text = match f.cause {
        Cause::Values => "values".to_string(),
        Cause::LeftEdit => format!("hand edit on left{}", by(&f.left_manager)),
        Cause::RightEdit => format!("hand edit on right{}", by(&f.right_manager)),
        Cause::BothEdits => {
            format!("hand edits on both (left{}, right{})", by(&f.left_manager), by(&f.right_manager))
        }
        Cause::Extra => "extra object".to_string(),
        Cause::LiveCrd => "live CRDs differ (Helm never upgrades crds/)".to_string(),
    };
    // A rendered difference that a side also edited; who wrote an extra object's field.
    let verb = match f.cause {
        Cause::Values => Some("edited"),
        Cause::Extra => Some("written"),
        _ => None,
    };
    if let Some(verb) = verb {
        for (word, m) in [("left", &f.left_manager), ("right", &f.right_manager)] {
            if let Some(m) = m {
                text.push_str(&format!(", {verb} on {word} by {m}"));
            }
        }
    }
    text
}

fn presence_word(p: Presence) -> &'static str {
    match p {
        Presence::Live => "live",
        Presence::Missing => "missing (deleted by hand)",
        Presence::Absent => "absent",
        Presence::Error => "unreadable",
        Presence::Extra => "extra (live, in no manifest)",
    }
}

fn object_title(o: &ObjectDifference) -> String {
    format!("{} {}", o.kind, o.display_name())
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The compare report as text.
pub fn text<W: Write>(out: &mut W, r: &CompareReport, layout: Layout, theme: &Theme) -> io::Result<()> {
    writeln!(
        out,
        "{}",
        theme.heading(&format!("compare {}: {}  vs  {}", r.target, side_title(&r.left), side_title(&r.right)))
    )?;
    writeln!(out, "  left   {}", side_line(&r.left, &r.target))?;
    writeln!(out, "  right  {}", side_line(&r.right, &r.target))?;
    let (left_head, right_head) = (format!("LEFT {}", side_title(&r.left)), format!("RIGHT {}", side_title(&r.right)));
    let values = |list: &[ValueDifference]| list.iter().filter(|d| d.ignored.is_none()).cloned().collect::<Vec<_>>();
    let (chart, vals) = (values(&r.chart), values(&r.values));
    let objects: Vec<&ObjectDifference> = r.objects.iter().filter(|o| o.counts()).collect();
    for (title, list) in [("Chart", &chart), ("Values", &vals)] {
        if list.is_empty() {
            continue;
        }
        writeln!(out, "\n{}", theme.heading(title))?;
        match layout {
            Layout::Split => {
                let rows: Vec<Vec<String>> =
                    list.iter().map(|d| vec![format!("  {}", d.path), shown(&d.left), shown(&d.right)]).collect();
                let header = ["  KEY".to_string(), left_head.clone(), right_head.clone()];
                super::aligned(out, &header, &rows, 2, |_, c| theme.live(c), theme)?;
            }
            Layout::Unified => {
                for d in list {
                    writeln!(out, "  {}", d.path)?;
                    writeln!(out, "    left   {}", theme.desired(&shown(&d.left)))?;
                    writeln!(out, "    right  {}", theme.live(&shown(&d.right)))?;
                }
            }
        }
    }
    if !objects.is_empty() {
        writeln!(out, "\n{}", theme.heading("Objects"))?;
        match layout {
            Layout::Split => {
                let mut rows: Vec<Vec<String>> = Vec::new();
                for o in &objects {
                    if o.left != o.right {
                        rows.push(vec![
                            format!("  {}", object_title(o)),
                            presence_word(o.left).to_string(),
                            presence_word(o.right).to_string(),
                            String::new(),
                        ]);
                    }
                    for f in o.fields.iter().filter(|f| f.ignored.is_none()) {
                        rows.push(vec![
                            format!("  {} {}", object_title(o), f.path),
                            shown(&f.left),
                            shown(&f.right),
                            cause_text(f),
                        ]);
                    }
                }
                let header = ["  OBJECT FIELD".to_string(), left_head.clone(), right_head.clone(), "CAUSE".into()];
                super::aligned(out, &header, &rows, 3, |_, c| theme.dim(c), theme)?;
            }
            Layout::Unified => {
                for o in &objects {
                    writeln!(out, "  {}", theme.object(&object_title(o)))?;
                    if o.left != o.right {
                        writeln!(out, "    left   {}", theme.desired(presence_word(o.left)))?;
                        writeln!(out, "    right  {}", theme.live(presence_word(o.right)))?;
                    }
                    for f in o.fields.iter().filter(|f| f.ignored.is_none()) {
                        writeln!(out, "    {}  {}", f.path, theme.dim(&format!("({})", cause_text(f))))?;
                        writeln!(out, "      left   {}", theme.desired(&shown(&f.left)))?;
                        writeln!(out, "      right  {}", theme.live(&shown(&f.right)))?;
                    }
                }
            }
        }
    }
    writeln!(out)?;
    let ignored = match r.ignored {
        0 => String::new(),
        n => format!("; {} ignored", plural(n, "difference", "differences")),
    };
    match r.status {
        CompareStatus::Same => writeln!(out, "{}", theme.clean(&format!("same{ignored}")))?,
        CompareStatus::Different => {
            let mut parts = Vec::new();
            if !r.left.found || !r.right.found {
                let side = if !r.left.found { "left" } else { "right" };
                parts.push(format!("the release is not deployed on the {side}"));
            }
            let (c, v, o) = r.counted();
            for (n, one, many) in [(c, "chart field", "chart fields"), (v, "value", "values"), (o, "object", "objects")]
            {
                if n > 0 {
                    parts.push(plural(n, one, many));
                }
            }
            writeln!(out, "{}", theme.drifted(&format!("different: {}{ignored}", parts.join(", "))))?
        }
        CompareStatus::Error => {
            let side = if r.left.error.is_some() { &r.left } else { &r.right };
            let which = if r.left.error.is_some() { "left" } else { "right" };
            writeln!(
                out,
                "{}",
                theme.error(&format!(
                    "error: the {which} side ({}) could not be read in full, nothing is said of the differences",
                    side_title(side)
                ))
            )?
        }
    }
    Ok(())
}

const CSV_HEADER: [&str; 11] = [
    "section",
    "kind",
    "left_name",
    "right_name",
    "path",
    "left",
    "right",
    "cause",
    "left_manager",
    "right_manager",
    "ignored",
];

fn csv_value(v: &Option<Value>) -> String {
    match v {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// The compare report as CSV: one row per difference (ignored ones too, with why), an object on
/// one side only as one row with its presence on each side.
pub fn csv<W: Write>(out: &mut W, r: &CompareReport) -> io::Result<()> {
    writeln!(out, "{}", line(&CSV_HEADER))?;
    let ignored = |i: &Option<String>| i.clone().unwrap_or_default();
    for (section, list) in [("chart", &r.chart), ("values", &r.values)] {
        for d in list {
            let row = [
                section.to_string(),
                String::new(),
                String::new(),
                String::new(),
                d.path.to_string(),
                csv_value(&d.left),
                csv_value(&d.right),
                String::new(),
                String::new(),
                String::new(),
                ignored(&d.ignored),
            ];
            writeln!(out, "{}", line(&row))?;
        }
    }
    for o in &r.objects {
        let name = |n: &Option<String>| n.clone().unwrap_or_default();
        if o.left != o.right || o.ignored.is_some() {
            let row = [
                "objects".to_string(),
                o.kind.clone(),
                name(&o.left_name),
                name(&o.right_name),
                String::new(),
                presence_word(o.left).to_string(),
                presence_word(o.right).to_string(),
                String::new(),
                String::new(),
                String::new(),
                ignored(&o.ignored),
            ];
            writeln!(out, "{}", line(&row))?;
        }
        for f in &o.fields {
            let row = [
                "objects".to_string(),
                o.kind.clone(),
                name(&o.left_name),
                name(&o.right_name),
                f.path.to_string(),
                csv_value(&f.left),
                csv_value(&f.right),
                f.cause.name().to_string(),
                f.left_manager.clone().unwrap_or_default(),
                f.right_manager.clone().unwrap_or_default(),
                ignored(&f.ignored),
            ];
            writeln!(out, "{}", line(&row))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;
    use crate::report::envdiff::{COMPARE_SCHEMA_VERSION, CompareSide};
    use crate::report::path::FieldPath;
    use serde_json::json;

    fn report() -> CompareReport {
        let side = |cluster: &str, drift: Status| CompareSide {
            cluster: cluster.into(),
            namespace: "shop".into(),
            release: "shop".into(),
            found: true,
            revision: Some(2),
            chart: Some("shop".into()),
            chart_version: Some("1.0.0".into()),
            app_version: Some("2.0".into()),
            helm_status: Some("deployed".into()),
            drift: Some(drift),
            error: None,
        };
        let path = |p: &[&str]| p.iter().fold(FieldPath::root(), |acc, k| acc.key(k));
        CompareReport {
            schema_version: COMPARE_SCHEMA_VERSION,
            target: "shop".into(),
            status: CompareStatus::Different,
            left: side("staging", Status::Clean),
            right: side("prod", Status::Drifted),
            chart: Vec::new(),
            values: vec![
                ValueDifference {
                    path: path(&["replicaCount"]),
                    left: Some(json!(1)),
                    right: Some(json!(3)),
                    ignored: None,
                },
                ValueDifference {
                    path: path(&["host"]),
                    left: Some(json!("a")),
                    right: Some(json!("b")),
                    ignored: Some("rule".into()),
                },
            ],
            objects: vec![ObjectDifference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                left_name: Some("shop-web".into()),
                right_name: Some("shop-web".into()),
                left: Presence::Live,
                right: Presence::Live,
                fields: vec![FieldDifference {
                    path: path(&["spec", "paused"]),
                    left: None,
                    right: Some(json!(true)),
                    cause: Cause::RightEdit,
                    left_manager: None,
                    right_manager: Some("kubectl-patch".into()),
                    ignored: None,
                }],
                ignored: None,
            }],
            ignored: 1,
        }
    }

    #[test]
    fn text_unified_and_split() {
        let mut out = Vec::new();
        text(&mut out, &report(), Layout::Unified, &Theme::plain()).unwrap();
        let unified = String::from_utf8(out).unwrap();
        insta::assert_snapshot!("compare_text_unified", unified);
        let mut out = Vec::new();
        text(&mut out, &report(), Layout::Split, &Theme::plain()).unwrap();
        let split = String::from_utf8(out).unwrap();
        assert!(split.contains("hand edit on right by kubectl-patch"), "{split}");
        assert!(!split.contains("host"), "ignored differences are only counted: {split}");
        assert!(split.ends_with("different: 1 value, 1 object; 1 difference ignored\n"), "{split}");
    }

    /// An extra object on one side, one written differently on both, and a CRD of the charts'
    /// crds/ whose live CRDs differ: presence and causes named in the text and in CSV.
    #[test]
    fn extra_objects_and_chart_crds() {
        let mut r = report();
        r.values.clear();
        let field = |path: &str, cause: Cause, left: Option<String>, right: Option<String>| FieldDifference {
            path: path.split('.').fold(FieldPath::root(), |acc, k| acc.key(k)),
            left: Some(json!("a")),
            right: Some(json!("b")),
            cause,
            left_manager: left,
            right_manager: right,
            ignored: None,
        };
        let object = |kind: &str, name: &str, left: Presence, right: Presence, fields| ObjectDifference {
            api_version: "v1".into(),
            kind: kind.into(),
            left_name: Some(name.into()),
            right_name: (right != Presence::Absent).then(|| name.into()),
            left,
            right,
            fields,
            ignored: None,
        };
        r.objects = vec![
            object("ConfigMap", "stray", Presence::Extra, Presence::Absent, Vec::new()),
            object(
                "ConfigMap",
                "flags",
                Presence::Extra,
                Presence::Extra,
                vec![field("data.mode", Cause::Extra, Some("kubectl-create".into()), Some("kubectl-edit".into()))],
            ),
            object(
                "CustomResourceDefinition",
                "gizmos.drift.test",
                Presence::Live,
                Presence::Live,
                vec![field("spec.versions", Cause::LiveCrd, None, None)],
            ),
        ];
        let mut out = Vec::new();
        text(&mut out, &r, Layout::Unified, &Theme::plain()).unwrap();
        let unified = String::from_utf8(out).unwrap();
        for want in [
            "ConfigMap stray\n    left   extra (live, in no manifest)\n    right  absent",
            "data.mode  (extra object, written on left by kubectl-create, written on right by kubectl-edit)",
            "spec.versions  (live CRDs differ (Helm never upgrades crds/))",
            "different: 3 objects",
        ] {
            assert!(unified.contains(want), "{want:?} in:\n{unified}");
        }
        let mut out = Vec::new();
        csv(&mut out, &r).unwrap();
        let csv = String::from_utf8(out).unwrap();
        assert!(
            csv.contains("objects,ConfigMap,flags,flags,data.mode,a,b,extra,kubectl-create,kubectl-edit,"),
            "{csv}"
        );
        assert!(csv.contains(",spec.versions,a,b,live-crd,,,"), "{csv}");
    }

    #[test]
    fn csv_has_a_row_per_difference() {
        let mut out = Vec::new();
        csv(&mut out, &report()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(lines[3], "objects,Deployment,shop-web,shop-web,spec.paused,,true,right-edit,,kubectl-patch,");
        assert!(lines[2].ends_with(",rule"), "{text}");
    }
}
