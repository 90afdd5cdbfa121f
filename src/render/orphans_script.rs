//! Cleanup scripts (`--script export|delete`): bash for a person to review and run with their
//! own kubectl. The tool itself never writes to the cluster.
//!
//! Per orphan: `kubectl get -o go-template=...` writes the object without server-owned fields
//! (status, uid, resourceVersion, creationTimestamp, generation, managedFields, ownerReferences,
//! the last-applied annotation, a Service's clusterIP unless headless, a PV's claimRef uid, a
//! Job's selector and controller-uid labels) to `<dir>/<Kind>_<namespace>_<name>.json`; `kubectl
//! create --dry-run=client` proves the file reads back; only then, for `delete`, the object is
//! deleted. `set -euo pipefail` stops the script at the first failure. The stripping is done by
//! kubectl's own go-template output (a small recursive JSON writer), so no jq is needed.

use std::fmt::Write as _;

use crate::report::orphan_kinds::ExaminedKind;
use crate::report::orphans::{EvidenceClass, OrphanItem, OrphanReport};
use crate::report::shell::shell_quote_always as sh_quote;

/// What the script does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptMode {
    /// Back up only.
    Export,
    /// Back up, then delete each object right after its own backup.
    Delete,
}

/// Where the script's kubectl points.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The kubeconfig context to pin (`None`: kubectl's in-cluster configuration).
    pub context: Option<String>,
    /// A kubeconfig file given with `--kubeconfig`.
    pub kubeconfig: Option<String>,
}

/// Text safe for a one-line comment.
fn comment(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// The backup file name of an object.
pub fn backup_file(item: &OrphanItem) -> String {
    format!("{}_{}_{}.json", item.kind, item.namespace.as_deref().unwrap_or(""), item.name)
}

/// A go-template that writes any value as JSON (strings Go-quoted, which for the text found in
/// Kubernetes objects is JSON).
const VALUE_TEMPLATE: &str = concat!(
    r#"{{define "v"}}{{$t := printf "%T" .}}"#,
    r#"{{if eq $t "map[string]interface {}"}}{{"{"}}{{$s := ""}}{{range $k, $x := .}}{{$s}}{{printf "%q" $k}}: {{template "v" $x}}{{$s = ", "}}{{end}}{{"}"}}"#,
    r#"{{else if eq $t "[]interface {}"}}[{{$s := ""}}{{range .}}{{$s}}{{template "v" .}}{{$s = ", "}}{{end}}]"#,
    r#"{{else if eq $t "string"}}{{printf "%q" .}}{{else if eq $t "<nil>"}}null{{else}}{{.}}{{end}}{{end}}"#,
);

/// A template body writing the map `.` as JSON: keys in `keep` only (all when empty), minus
/// keys in `skip`; values of keys in `special` through the named template.
fn map_template(keep: &[&str], skip: &[&str], special: &[(&str, &str)]) -> String {
    let any = |keys: &[&str]| keys.iter().map(|k| format!(r#"(eq $k "{k}")"#)).collect::<Vec<_>>().join(" ");
    let cond = match (keep.is_empty(), skip.is_empty()) {
        (false, _) => format!("or {}", any(keep)),
        (true, false) => format!("not (or {})", any(skip)),
        (true, true) => "true".to_string(),
    };
    let mut value = String::new();
    for (i, (key, tmpl)) in special.iter().enumerate() {
        let word = if i == 0 { "if" } else { "else if" };
        let _ = write!(value, r#"{{{{{word} eq $k "{key}"}}}}{{{{template "{tmpl}" $x}}}}"#);
    }
    if special.is_empty() {
        value.push_str(r#"{{template "v" $x}}"#);
    } else {
        value.push_str(r#"{{else}}{{template "v" $x}}{{end}}"#);
    }
    format!(
        r#"{{{{"{{"}}}}{{{{$s := ""}}}}{{{{range $k, $x := .}}}}{{{{if {cond}}}}}{{{{$s}}}}{{{{printf "%q" $k}}}}: {value}{{{{$s = ", "}}}}{{{{end}}}}{{{{end}}}}{{{{"}}"}}}}"#
    )
}

fn define(name: &str, body: &str) -> String {
    format!(r#"{{{{define "{name}"}}}}{body}{{{{end}}}}"#)
}

/// The whole stripping template for objects of `kind`.
pub fn strip_template(kind: ExaminedKind) -> String {
    let mut t = String::from(VALUE_TEMPLATE);
    let label_skip: &[&str] =
        if kind == ExaminedKind::Job { &["controller-uid", "batch.kubernetes.io/controller-uid"] } else { &[] };
    t.push_str(&define("labels", &map_template(&[], label_skip, &[])));
    t.push_str(&define("annotations", &map_template(&[], &["kubectl.kubernetes.io/last-applied-configuration"], &[])));
    t.push_str(&define(
        "meta",
        &map_template(
            &["name", "namespace", "labels", "annotations", "finalizers"],
            &[],
            &[("labels", "labels"), ("annotations", "annotations")],
        ),
    ));
    let spec = match kind {
        ExaminedKind::Service => format!(
            r#"{{{{if eq (printf "%v" (index . "clusterIP")) "None"}}}}{{{{template "v" .}}}}{{{{else}}}}{}{{{{end}}}}"#,
            map_template(&[], &["clusterIP", "clusterIPs"], &[])
        ),
        ExaminedKind::PersistentVolume => {
            t.push_str(&define("claimref", &map_template(&[], &["uid", "resourceVersion"], &[])));
            map_template(&[], &[], &[("claimRef", "claimref")])
        }
        ExaminedKind::Job => {
            t.push_str(&define("tmeta", &map_template(&[], &[], &[("labels", "labels")])));
            t.push_str(&define("podtemplate", &map_template(&[], &[], &[("metadata", "tmeta")])));
            format!(
                r#"{{{{if eq (printf "%v" (index . "manualSelector")) "true"}}}}{{{{template "v" .}}}}{{{{else}}}}{}{{{{end}}}}"#,
                map_template(&[], &["selector"], &[("template", "podtemplate")])
            )
        }
        _ => r#"{{template "v" .}}"#.to_string(),
    };
    t.push_str(&define("spec", &spec));
    t.push_str(&map_template(&[], &["status"], &[("metadata", "meta"), ("spec", "spec")]));
    t
}

/// The bash script for the orphans of `report`. `generated_at` is an RFC 3339 time for the
/// header; the backup directory is named when the script runs.
pub fn script(report: &OrphanReport, mode: ScriptMode, target: &Target, generated_at: &str) -> String {
    let orphans: Vec<&OrphanItem> = report.orphans().filter(|i| i.class == EvidenceClass::Orphan).collect();
    let mut s = String::new();
    let flag = match mode {
        ScriptMode::Export => "export",
        ScriptMode::Delete => "delete",
    };
    let scope = report
        .summary
        .namespace
        .as_deref()
        .map(|n| format!("namespace {n}"))
        .unwrap_or_else(|| "all namespaces".into());
    let _ = writeln!(s, "#!/usr/bin/env bash");
    let _ = writeln!(s, "# Generated by kubectl-drift orphans --script {flag} at {generated_at}.");
    let _ = writeln!(
        s,
        "# Context: {}. Scope: {scope}. {} orphan(s).",
        comment(target.context.as_deref().unwrap_or("(in-cluster configuration)")),
        orphans.len()
    );
    let _ = writeln!(s, "#");
    let _ = writeln!(s, "# Review it before you run it. For each object it writes a backup without server-owned");
    let _ =
        writeln!(s, "# fields to $BACKUP_DIR/<Kind>_<namespace>_<name>.json (mode 600) and checks that kubectl reads");
    match mode {
        ScriptMode::Delete => {
            let _ = writeln!(s, "# the file back; only then it deletes that object. It stops at the first failure, so");
            let _ = writeln!(s, "# nothing after a failed step is deleted.");
        }
        ScriptMode::Export => {
            let _ = writeln!(s, "# the file back. It deletes nothing and stops at the first failure.");
        }
    }
    let _ = writeln!(s, "# Restore with: kubectl apply -f <backup dir>/");
    let _ = writeln!(s, "set -euo pipefail");
    let _ = writeln!(s, "umask 077");
    let _ = writeln!(s);
    let _ = writeln!(s, "KUBECTL=\"${{KUBECTL:-kubectl}}\"");
    let mut pins = String::new();
    if let Some(kc) = &target.kubeconfig {
        let _ = writeln!(s, "KUBECONFIG_FILE={}", sh_quote(kc));
        pins.push_str(" --kubeconfig \"$KUBECONFIG_FILE\"");
    }
    if let Some(ctx) = &target.context {
        let _ = writeln!(s, "CONTEXT={}", sh_quote(ctx));
        pins.push_str(" --context \"$CONTEXT\"");
    }
    let _ = writeln!(s, "BACKUP_DIR=\"${{BACKUP_DIR:-kube-drift-backup-$(date -u +%Y%m%dT%H%M%SZ)}}\"");
    let _ = writeln!(s);
    let _ = writeln!(s, "k() {{ \"$KUBECTL\"{pins} \"$@\"; }}");
    let _ = writeln!(
        s,
        "command -v \"$KUBECTL\" >/dev/null 2>&1 || {{ echo \"kubectl not found (set KUBECTL)\" >&2; exit 1; }}"
    );
    let _ = writeln!(s, "mkdir -p \"$BACKUP_DIR/.partial\"");
    let _ = writeln!(s);
    let _ = writeln!(s, "# backup RESOURCE NAMESPACE NAME FILE TEMPLATE: save the object without server-owned fields,");
    let _ = writeln!(s, "# check that kubectl reads the file back, then move it into the backup directory.");
    let _ = writeln!(s, "backup() {{");
    let _ = writeln!(s, "  local resource=\"$1\" ns=\"$2\" name=\"$3\" file=\"$4\" template=\"$5\"");
    let _ = writeln!(s, "  local partial=\"$BACKUP_DIR/.partial/$file\"");
    let _ = writeln!(s, "  if [[ -n \"$ns\" ]]; then");
    let _ = writeln!(s, "    k -n \"$ns\" get \"$resource\" \"$name\" -o go-template=\"$template\" > \"$partial\"");
    let _ = writeln!(s, "  else");
    let _ = writeln!(s, "    k get \"$resource\" \"$name\" -o go-template=\"$template\" > \"$partial\"");
    let _ = writeln!(s, "  fi");
    let _ = writeln!(s, "  k create --dry-run=client -o name -f \"$partial\" > /dev/null");
    let _ = writeln!(s, "  chmod 600 \"$partial\"");
    let _ = writeln!(s, "  mv \"$partial\" \"$BACKUP_DIR/$file\"");
    let _ = writeln!(s, "  echo \"backed up $resource ${{ns:+$ns/}}$name to $BACKUP_DIR/$file\" >&2");
    let _ = writeln!(s, "}}");
    if mode == ScriptMode::Delete {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "# remove RESOURCE NAMESPACE NAME: delete the object (called only after its backup succeeded)."
        );
        let _ = writeln!(s, "remove() {{");
        let _ = writeln!(s, "  local resource=\"$1\" ns=\"$2\" name=\"$3\"");
        let _ = writeln!(s, "  if [[ -n \"$ns\" ]]; then");
        let _ = writeln!(s, "    k -n \"$ns\" delete \"$resource\" \"$name\" --wait=true --timeout=120s");
        let _ = writeln!(s, "  else");
        let _ = writeln!(s, "    k delete \"$resource\" \"$name\" --wait=true --timeout=120s");
        let _ = writeln!(s, "  fi");
        let _ = writeln!(s, "}}");
    }
    let mut kinds: Vec<ExaminedKind> = orphans.iter().map(|i| i.examined).collect();
    kinds.sort();
    kinds.dedup();
    if !kinds.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "# Templates for `kubectl get -o go-template`: the object as JSON without server-owned fields."
        );
    }
    for k in &kinds {
        let _ = writeln!(s, "T_{}={}", k.kind(), sh_quote(&strip_template(*k)));
    }
    for item in &orphans {
        let ns = item.namespace.as_deref().unwrap_or("");
        let args = format!("{} {} {}", sh_quote(&item.examined.resource()), sh_quote(ns), sh_quote(&item.name));
        let _ = writeln!(s);
        let _ = writeln!(s, "# {}: {}", comment(&item.title()), comment(&item.reasons.join("; ")));
        let _ = writeln!(s, "backup {args} {} \"$T_{}\"", sh_quote(&backup_file(item)), item.kind);
        if mode == ScriptMode::Delete {
            let _ = writeln!(s, "remove {args}");
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "rmdir \"$BACKUP_DIR/.partial\"");
    let done = match mode {
        ScriptMode::Export => "backed up",
        ScriptMode::Delete => "backed up and deleted",
    };
    let _ = writeln!(
        s,
        "echo \"done: {} object(s) {done}; restore with: kubectl apply -f $BACKUP_DIR/\" >&2",
        orphans.len()
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fit_in_single_quotes_and_strip() {
        for k in ExaminedKind::ALL {
            let t = strip_template(k);
            assert!(!t.contains('\''), "{k}");
            assert!(t.contains(r#"(eq $k "status")"#), "{k}");
            assert!(t.contains("last-applied-configuration"), "{k}");
        }
        assert!(strip_template(ExaminedKind::Service).contains(r#"(eq $k "clusterIP")"#));
        assert!(strip_template(ExaminedKind::Job).contains("controller-uid"));
        assert!(strip_template(ExaminedKind::PersistentVolume).contains(r#"(eq $k "uid")"#));
        // Literal braces are always written as actions, so the template parses.
        assert!(!strip_template(ExaminedKind::Job).contains("{{{"));
    }

    #[test]
    fn delete_script_shape() {
        let items = vec![
            OrphanItem::sample(ExaminedKind::ConfigMap, Some("shop"), "old", EvidenceClass::Orphan),
            OrphanItem::sample(ExaminedKind::ClusterRole, None, "team:reader", EvidenceClass::Orphan),
            OrphanItem::sample(ExaminedKind::ConfigMap, Some("shop"), "kube-root-ca.crt", EvidenceClass::Protected),
            OrphanItem::sample(ExaminedKind::Secret, Some("shop"), "used", EvidenceClass::InUse),
        ];
        let report = OrphanReport::new(items, true, None, &[ExaminedKind::ConfigMap], 3600);
        let target = Target { context: Some("prod's".into()), kubeconfig: None };
        let text = script(&report, ScriptMode::Delete, &target, "2026-01-01T00:00:00Z");
        assert!(text.starts_with("#!/usr/bin/env bash\n"));
        assert!(text.contains("set -euo pipefail\numask 077\n"));
        assert!(text.contains(r"CONTEXT='prod'\''s'"));
        let backup_cm =
            text.find("backup 'configmaps' 'shop' 'old' 'ConfigMap_shop_old.json' \"$T_ConfigMap\"").unwrap();
        let remove_cm = text.find("remove 'configmaps' 'shop' 'old'\n").unwrap();
        assert!(backup_cm < remove_cm);
        assert!(text.contains(
            "backup 'clusterroles.rbac.authorization.k8s.io' '' 'team:reader' 'ClusterRole__team:reader.json'"
        ));
        assert!(!text.contains("kube-root-ca.crt"), "protected objects never get a line");
        assert!(!text.contains("'used'"), "in-use objects never get a line");
        assert_eq!(text.matches("\nremove '").count(), 2);
        let export = script(&report, ScriptMode::Export, &target, "2026-01-01T00:00:00Z");
        assert!(!export.contains("\nremove '"));
        assert_eq!(export.matches("\nbackup '").count(), 2);
    }
}
