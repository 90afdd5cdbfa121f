//! `upgrade`'s text: a header (release, chart from and to, how Helm will write), then one
//! section per class, blocking first, each change with its field, its values (current manifest,
//! new render, live), who edited it and when, and the error Helm would hit.

use std::io::Write;

use serde_json::Value;

use crate::report::upgrade::{UpgradeChange, UpgradeClass, UpgradeReport};

use super::Theme;

fn short(v: &Value) -> String {
    let text = match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    if text.chars().count() > 80 { format!("{}...", text.chars().take(77).collect::<String>()) } else { text }
}

fn value(v: &Option<Value>) -> String {
    v.as_ref().map(short).unwrap_or_else(|| "(unset)".into())
}

/// The prediction as text.
pub fn text<W: Write>(out: &mut W, r: &UpgradeReport, theme: &Theme) -> std::io::Result<()> {
    writeln!(
        out,
        "{} {}/{} (revision {}, {}) -> {}",
        theme.heading("upgrade"),
        r.namespace,
        r.release,
        r.revision,
        r.chart,
        r.new_chart
    )?;
    let force = if r.force_conflicts { ", --force-conflicts" } else { "" };
    writeln!(out, "{}", theme.dim(&format!("Helm writes with {}{force}", r.apply_method.label())))?;
    if r.changes.is_empty() {
        writeln!(out, "{}", theme.clean("nothing changes"))?;
        return Ok(());
    }
    for class in UpgradeClass::ALL {
        let changes: Vec<&UpgradeChange> = r.changes.iter().filter(|c| c.class == class).collect();
        if changes.is_empty() {
            continue;
        }
        writeln!(out)?;
        let title = format!("{} ({})", class.title(), changes.len());
        let title = match class {
            UpgradeClass::Blocking => theme.error(&title),
            UpgradeClass::Overwritten => theme.drifted(&title),
            _ => theme.heading(&title),
        };
        writeln!(out, "{title}")?;
        for c in changes {
            change(out, c, theme)?;
        }
    }
    writeln!(out)?;
    let counts: Vec<String> = UpgradeClass::ALL
        .iter()
        .filter(|k| r.count(**k) > 0)
        .map(|k| format!("{} {}", r.count(*k), k.title()))
        .collect();
    writeln!(out, "{}", counts.join(", "))
}

/// A change's object and field: `Deployment shop/web spec.selector`.
pub(crate) fn what(c: &UpgradeChange) -> String {
    match &c.path {
        Some(p) => format!("{} {p}", c.object),
        None => c.object.to_string(),
    }
}

/// A change on one line, for the CI formats: what, why, Helm's error, values, who.
pub(crate) fn message(c: &UpgradeChange) -> String {
    let mut m = format!("{} {}: {}", c.class.title(), what(c), c.why);
    if c.path.is_some() {
        m.push_str(&format!(" (current {}, new {}, live {})", value(&c.current), value(&c.rendered), value(&c.live)));
    }
    if let Some(manager) = &c.manager {
        m.push_str(&format!("; by {manager}"));
        if let Some(t) = &c.time {
            m.push_str(&format!(" at {t}"));
        }
    }
    if let Some(e) = &c.error {
        m.push_str(&format!("; helm: {e}"));
    }
    if !c.referenced_by.is_empty() {
        m.push_str(&format!("; still referenced by {}", c.referenced_by.join(", ")));
    }
    m
}

fn change<W: Write>(out: &mut W, c: &UpgradeChange, theme: &Theme) -> std::io::Result<()> {
    writeln!(out, "  {}: {}", theme.object(&what(c)), c.why)?;
    if c.path.is_some() {
        writeln!(
            out,
            "    current {}  new {}  live {}",
            theme.desired(&value(&c.current)),
            theme.live(&value(&c.rendered)),
            value(&c.live)
        )?;
    }
    if let Some(m) = &c.manager {
        let when = c.time.as_deref().map(|t| format!(" at {t}")).unwrap_or_default();
        writeln!(out, "    {}", theme.dim(&format!("by {m}{when}")))?;
    }
    if !c.values.is_empty() {
        let values: Vec<String> = c.values.iter().map(ToString::to_string).collect();
        writeln!(out, "    {}", theme.dim(&format!("from values: {}", values.join(", "))))?;
    }
    if let Some(e) = &c.error {
        writeln!(out, "    {}", theme.error(&format!("helm: {e}")))?;
    }
    if !c.referenced_by.is_empty() {
        writeln!(out, "    still referenced by: {}", c.referenced_by.join("; "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::adopt::ObjectRef;
    use crate::report::upgrade::ApplyMethod;
    use serde_json::json;

    #[test]
    fn blocking_comes_first_with_helms_error() {
        let object = ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        };
        let base = UpgradeChange::whole(UpgradeClass::Kept, object, "new in the render".into());
        let report = UpgradeReport {
            release: "web".into(),
            namespace: "shop".into(),
            revision: 1,
            chart: "web-1.0.0".into(),
            new_chart: "./web".into(),
            apply_method: ApplyMethod::ThreeWayMerge,
            force_conflicts: false,
            changes: vec![
                UpgradeChange {
                    class: UpgradeClass::Blocking,
                    path: Some("spec.selector".parse().unwrap()),
                    current: Some(json!({"app": "web"})),
                    rendered: Some(json!({"app": "web2"})),
                    error: Some("field is immutable".into()),
                    why: "an immutable field changes".into(),
                    ..base.clone()
                },
                UpgradeChange { class: UpgradeClass::Create, ..base },
            ],
        };
        let mut out = Vec::new();
        text(&mut out, &report, &Theme::plain()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let blocking = text.find("will block the upgrade (1)").unwrap();
        assert!(blocking < text.find("objects the upgrade creates (1)").unwrap(), "{text}");
        assert!(text.contains("helm: field is immutable"), "{text}");
        assert!(text.ends_with("1 will block the upgrade, 1 objects the upgrade creates\n"), "{text}");
    }
}
