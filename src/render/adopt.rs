//! `adopt`'s output: the values overlay (YAML, with what was adopted and what was not as
//! comments), the same as `--set` flags, or the report as JSON.

use std::io::Write;

use serde_json::Value;

use crate::report::adopt::{AdoptReport, set_flags, values_yaml};
use crate::report::shell::shell_quote;

fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.len() > 80 { format!("{}...", text.chars().take(77).collect::<String>()) } else { text }
}

fn header(report: &AdoptReport) -> Vec<String> {
    let mut out = vec![
        format!(
            "Values overlay for release {}/{} (chart {} {}, revision {}), by kubectl drift adopt.",
            report.namespace, report.release, report.chart, report.chart_version, report.revision
        ),
        format!(
            "Apply: helm upgrade {} CHART --version {} -n {} --reuse-values -f THIS_FILE",
            shell_quote(&report.release),
            shell_quote(&report.chart_version),
            shell_quote(&report.namespace)
        ),
    ];
    if !report.not_adoptable.is_empty() {
        out.push(
            "The upgrade sets the fields not adoptable (below) back to what the chart renders; to keep them, give \
             their kustomize patches to the upgrade as a --post-renderer."
                .into(),
        );
        if report.server_side {
            out.push(
                "Helm 4 applied this release server-side: those fields conflict on upgrade (another tool owns them \
                 now); add --force-conflicts to let the upgrade take them."
                    .into(),
            );
        }
    }
    if !report.left_out.is_empty() {
        out.push("The upgrade also sets the Secret values left out back to the chart's, unless you add them.".into());
    }
    if report.adopted.is_empty() {
        out.push("Nothing adopted.".into());
    } else {
        out.push("Adopted (each proven by rendering the chart with this overlay):".into());
        for a in &report.adopted {
            let old = a.old.as_ref().map(short).unwrap_or_else(|| "(none)".into());
            out.push(format!("  {} {}: {} {} -> {}", a.object, a.path, a.value_key, old, short(&a.new)));
        }
    }
    if !report.left_out.is_empty() {
        let keys: Vec<String> = report.left_out.iter().map(ToString::to_string).collect();
        out.push(format!(
            "Left out (Secret values; set them yourself, or run with --show-secrets): {}",
            keys.join(", ")
        ));
    }
    out
}

fn not_adoptable_lines(report: &AdoptReport) -> Vec<String> {
    let mut out = Vec::new();
    if !report.set_at_admission.is_empty() {
        out.push(
            "Not adopted, set at admission (a mutating webhook or policy changes them on every write; not a hand edit):"
                .into(),
        );
        for a in &report.set_at_admission {
            out.push(format!("  {} {}: {}", a.object, a.path, a.cause));
        }
    }
    if report.not_adoptable.is_empty() {
        return out;
    }
    out.push("Not adoptable (still drift after an upgrade with this overlay):".into());
    for n in &report.not_adoptable {
        let path = if n.path.segs().is_empty() { String::new() } else { format!(" {}", n.path) };
        out.push(format!("  {}{path}: {}", n.object, n.reason));
        if let Some(p) = &n.patch {
            out.push("    kustomize patch (for a --post-renderer) that keeps it:".into());
            out.extend(p.lines().map(|l| format!("      {l}")));
        }
    }
    out
}

/// `-o values`: comments, then the overlay.
pub fn values<W: Write>(out: &mut W, report: &AdoptReport) -> std::io::Result<()> {
    for line in header(report).into_iter().chain(not_adoptable_lines(report)) {
        writeln!(out, "# {line}")?;
    }
    out.write_all(values_yaml(&report.overlay).as_bytes())
}

/// `-o set`: the overlay as one line of Helm flags on `out`; what was not adopted on `err`.
pub fn set<W: Write, E: Write>(out: &mut W, err: &mut E, report: &AdoptReport) -> std::io::Result<()> {
    let flags: Vec<String> =
        set_flags(&report.overlay).into_iter().map(|(flag, arg)| format!("{flag} {}", shell_quote(&arg))).collect();
    writeln!(out, "{}", flags.join(" "))?;
    if !report.left_out.is_empty() {
        let keys: Vec<String> = report.left_out.iter().map(ToString::to_string).collect();
        writeln!(err, "left out (Secret values; run with --show-secrets to include them): {}", keys.join(", "))?;
    }
    for line in not_adoptable_lines(report) {
        writeln!(err, "{line}")?;
    }
    Ok(())
}

/// `-o json`: the report (the mapping field -> value key, old, new, proven; the fields left).
pub fn json<W: Write>(out: &mut W, report: &AdoptReport) -> std::io::Result<()> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Versioned<'a> {
        schema_version: u32,
        #[serde(flatten)]
        report: &'a AdoptReport,
    }
    super::json(out, &Versioned { schema_version: 1, report })
}

/// `adopt -f`: a unified diff of each file changed (`a/PATH`, `b/PATH`, as git writes them).
pub fn files_diff<W: Write>(out: &mut W, edits: &[(std::path::PathBuf, String, String)]) -> std::io::Result<()> {
    for (path, before, after) in edits {
        let shown = path.display().to_string();
        let name = shown.trim_start_matches('/');
        let diff = similar::TextDiff::from_lines(before.as_str(), after.as_str());
        write!(out, "{}", diff.unified_diff().context_radius(3).header(&format!("a/{name}"), &format!("b/{name}")))?;
    }
    Ok(())
}

/// `adopt -f -o json`: the fields written and the fields left.
pub fn files_json<W: Write>(out: &mut W, result: &crate::report::adopt::FilesAdopt) -> std::io::Result<()> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Json<'a> {
        schema_version: u32,
        files: Vec<String>,
        adopted: &'a [crate::report::adopt::FileAdoption],
        not_adoptable: &'a [crate::report::adopt::NotAdoptable],
        errors: &'a [String],
    }
    super::json(
        out,
        &Json {
            schema_version: 1,
            files: result.edits.iter().map(|(p, _, _)| p.display().to_string()).collect(),
            adopted: &result.adopted,
            not_adoptable: &result.not_adoptable,
            errors: &result.errors,
        },
    )
}

/// What `adopt -f` left, and the errors, for stderr.
pub fn files_left<W: Write>(err: &mut W, result: &crate::report::adopt::FilesAdopt) -> std::io::Result<()> {
    for n in &result.not_adoptable {
        let path = if n.path.segs().is_empty() { String::new() } else { format!(" {}", n.path) };
        writeln!(err, "not adopted: {}{path}: {}", n.object, n.reason)?;
    }
    for e in &result.errors {
        writeln!(err, "error: {e}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::adopt::{Adoption, NotAdoptable, ObjectRef};
    use crate::report::field::Change;
    use serde_json::json;

    fn report() -> AdoptReport {
        let object = ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        };
        AdoptReport {
            release: "web".into(),
            namespace: "shop".into(),
            revision: 2,
            chart: "web".into(),
            chart_version: "0.1.0".into(),
            adopted: vec![Adoption {
                object: object.clone(),
                path: "spec.replicas".parse().unwrap(),
                value_key: "replicaCount".parse().unwrap(),
                old: Some(json!(1)),
                new: json!(3),
                proven: true,
                secret: false,
            }],
            not_adoptable: vec![NotAdoptable {
                object,
                path: "spec.template.spec.containers[name=web].imagePullPolicy".parse().unwrap(),
                change: Change::Changed,
                reason: "no value renders this field".into(),
                patch: Some("- target: {kind: Deployment, name: web}".into()),
                also_renders: Vec::new(),
            }],
            left_out: vec!["db.password".parse().unwrap()],
            overlay: json!({"replicaCount": 3}),
            server_side: false,
            set_at_admission: Vec::new(),
        }
    }

    #[test]
    fn a_value_set_at_admission_is_named_and_never_in_the_overlay() {
        let mut r = report();
        r.set_at_admission = vec![crate::report::adopt::SetAtAdmission {
            object: r.adopted[0].object.clone(),
            path: "spec.template.spec.containers[name=web].resources.requests.cpu".parse().unwrap(),
            cause: "webhook adjuster.example.com".into(),
        }];
        let mut out = Vec::new();
        values(&mut out, &r).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("#   Deployment shop/web spec.template.spec.containers[name=web].resources.requests.cpu: webhook adjuster.example.com\n"), "{text}");
        assert!(text.lines().filter(|l| !l.starts_with('#')).all(|l| l == "replicaCount: 3"), "{text}");
        let (mut o, mut e) = (Vec::new(), Vec::new());
        set(&mut o, &mut e, &r).unwrap();
        assert!(String::from_utf8(e).unwrap().contains("set at admission"));
        let mut j = Vec::new();
        json(&mut j, &r).unwrap();
        let v: Value = serde_json::from_slice(&j).unwrap();
        assert_eq!(v["setAtAdmission"][0]["cause"], "webhook adjuster.example.com", "{v}");
        // Not counted against the report: what was drift was all adopted or left as before.
        r.not_adoptable.clear();
        r.left_out.clear();
        assert!(r.complete());
    }

    #[test]
    fn values_output_is_comments_then_yaml() {
        let mut out = Vec::new();
        values(&mut out, &report()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with("\nreplicaCount: 3\n"), "{text}");
        assert!(text.contains("#   Deployment shop/web spec.replicas: replicaCount 1 -> 3\n"), "{text}");
        assert!(text.contains("imagePullPolicy: no value renders this field"), "{text}");
        assert!(text.contains("Left out (Secret values"), "{text}");
        assert!(text.lines().filter(|l| !l.starts_with('#')).all(|l| l == "replicaCount: 3"), "{text}");
    }

    #[test]
    fn set_output_is_one_line_of_flags() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        set(&mut out, &mut err, &report()).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "--set replicaCount=3\n");
        assert!(String::from_utf8(err).unwrap().contains("db.password"));
    }

    #[test]
    fn json_output_has_the_mapping() {
        let mut out = Vec::new();
        json(&mut out, &report()).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["schemaVersion"], 1);
        assert_eq!(v["adopted"][0]["valueKey"], "replicaCount");
        assert_eq!(v["adopted"][0]["proven"], true);
        assert_eq!(v["notAdoptable"][0]["change"], "changed");
    }
}
