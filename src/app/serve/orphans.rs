//! The orphans scope: the saved scan (every examined object with its class), and the view the
//! API shows, with the dashboard's ignores and rules applied on top of the config's rules.
//! Finding ids are `Kind:namespace/name` (`Kind:name` when cluster-scoped): the same text
//! `orphans --ignore` takes.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::engine::select::ObjectRule;
use crate::report::duration::exact_duration;
use crate::report::orphan_kinds::ExaminedKind;
use crate::report::orphans::{EvidenceClass, OrphanItem, OrphanReport, OrphanSummary};

use super::store::State;

/// A finding's id.
pub fn id_of(item: &OrphanItem) -> String {
    match &item.namespace {
        Some(ns) => format!("{}:{ns}/{}", item.kind, item.name),
        None => format!("{}:{}", item.kind, item.name),
    }
}

/// Check an id's shape: `Kind:namespace/name` or `Kind:name`, with a kind the scan examines.
pub fn check_id(id: &str) -> Result<(), String> {
    let bad = |why: &str| {
        format!("invalid finding id {id:?}: {why} (ids look like ConfigMap:shop/settings or StorageClass:slow)")
    };
    let (kind, rest) = id.split_once(':').ok_or_else(|| bad("no ':' after the kind"))?;
    if ExaminedKind::of_kind(kind).is_none() {
        return Err(bad("not a kind the orphans scan examines"));
    }
    if rest.is_empty() || rest.split('/').any(str::is_empty) || rest.split('/').count() > 2 || id.len() > 600 {
        return Err(bad("the name is empty or malformed"));
    }
    Ok(())
}

/// The saved orphans scan.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrphansData {
    /// Every examined object (`--show all`), classed with the config's rules only.
    pub report: OrphanReport,
    /// Ids of the orphans left behind by uninstalled Helm releases (not in the report's JSON).
    pub leftover: Vec<String>,
}

impl OrphansData {
    pub fn new(report: OrphanReport) -> OrphansData {
        let leftover = report.items.iter().filter(|i| i.leftover).map(id_of).collect();
        OrphansData { report, leftover }
    }

    /// After reading the saved file back: the fields JSON does not carry.
    pub fn restore(&mut self) -> Result<(), String> {
        for item in &mut self.report.items {
            item.examined = ExaminedKind::of_kind(&item.kind).ok_or_else(|| format!("unknown kind {:?}", item.kind))?;
            item.leftover = self.leftover.contains(&id_of(item));
        }
        Ok(())
    }
}

/// A dashboard rule, parsed.
pub fn parse_rule(id: &str, rule: &str) -> Result<ObjectRule, String> {
    if rule.len() > 1000 {
        return Err(format!("rule {id}: longer than 1000 characters"));
    }
    ObjectRule::parse_cli(&format!("dashboard rule {id}"), rule).map_err(|e| e.to_string())
}

fn rule_matches(rule: &ObjectRule, item: &OrphanItem) -> bool {
    rule.matches(&item.kind, item.namespace.as_deref().unwrap_or(""), &item.name, &item.sources)
}

/// How many orphans of the scan (before any dashboard ignore) `rule` matches.
pub fn match_count(data: &OrphansData, rule: &ObjectRule) -> usize {
    data.report.items.iter().filter(|i| i.class == EvidenceClass::Orphan && rule_matches(rule, i)).count()
}

/// What the page's orphans count counts, said beside it. The dashboard scans every namespace and
/// the cluster-scoped kinds unless started with `-n`; `kubectl drift orphans` without `-A` looks
/// only in its context's namespace and at no cluster-scoped kind, so the two counts differ on the
/// same cluster unless the CLI is given the same scope. This names the command that makes the
/// same scan (same engine, same defaults) and the orphans only the dashboard's ignores hide.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CountScope {
    /// The `orphans` command whose count is this one (before the dashboard's own ignores).
    pub cli_command: String,
    /// Orphans of the scan that the dashboard's ignores and rules class `ignored` (the CLI does
    /// not know them).
    pub dashboard_ignored: usize,
    /// The sentence the page shows beside the count.
    pub note: String,
}

/// Where the server's scan reads from, as CLI flags: its `--context` (when it was given one)
/// and its `--config` (when that file has orphans rules, which the scan applies).
#[derive(Debug, Clone, Default)]
pub struct CliFlags {
    pub context: Option<String>,
    pub config: Option<String>,
}

/// The `kubectl drift orphans` command that scans what `summary`'s scan did.
pub fn cli_command(summary: &OrphanSummary, flags: &CliFlags) -> String {
    use crate::report::shell::shell_quote;
    let mut cmd = String::from("kubectl drift orphans");
    if let Some(c) = &flags.context {
        cmd.push_str(&format!(" --context {}", shell_quote(c)));
    }
    match &summary.namespace {
        Some(ns) => cmd.push_str(&format!(" -n {}", shell_quote(ns))),
        None => cmd.push_str(" -A"),
    }
    if summary.older_than_seconds != DEFAULT_OLDER_THAN_SECONDS {
        cmd.push_str(&format!(" --older-than {}", exact_duration(summary.older_than_seconds)));
    }
    if let Some(f) = &flags.config {
        cmd.push_str(&format!(" --config {}", shell_quote(f)));
    }
    cmd
}

/// `--older-than`'s default, for the CLI and the server.
const DEFAULT_OLDER_THAN_SECONDS: u64 = 3600;

/// The count's scope for the page: `summary` is the view's (after the dashboard's ignores).
pub fn count_scope(summary: &OrphanSummary, dashboard_ignored: usize, flags: &CliFlags) -> CountScope {
    let cli = cli_command(summary, flags);
    let c = &summary.counts;
    let s = |n: usize| if n == 1 { "" } else { "s" };
    let cluster_kinds: Vec<&str> = summary
        .kinds
        .iter()
        .filter(|k| ExaminedKind::of_kind(k).is_some_and(|k| !k.namespaced()))
        .map(String::as_str)
        .collect();
    let mut note = format!("{} orphan{} among {} object{} examined ", c.orphan, s(c.orphan), c.examined, s(c.examined));
    match &summary.namespace {
        Some(ns) => note.push_str(&format!("in namespace {ns} (cluster-scoped kinds are examined only with -A)")),
        None if cluster_kinds.is_empty() => note.push_str("in every namespace"),
        None => {
            note.push_str(&format!("in every namespace and of the cluster-scoped kinds ({})", cluster_kinds.join(", ")))
        }
    }
    note.push_str(&format!(", older than {}: the count of `{cli}`.", exact_duration(summary.older_than_seconds)));
    if summary.namespace.is_none() {
        note.push_str(
            " Without -A, `kubectl drift orphans` looks only in its context's namespace and at no cluster-scoped kind.",
        );
    }
    if dashboard_ignored > 0 {
        note.push_str(&format!(
            " {dashboard_ignored} more {} ignored by this dashboard's ignores and rules, which the CLI does not know.",
            if dashboard_ignored == 1 { "is" } else { "are" }
        ));
    }
    CountScope { cli_command: cli, dashboard_ignored, note }
}

/// The orphans as the API shows them: the saved scan's items with the dashboard's ignores and
/// rules applied. Only the items those class otherwise are kept here; the others are read from
/// the scan's data ([`View::items`]), so the server holds one copy of every examined object, not
/// two (at 2,000 releases each copy is over 100,000 items).
#[derive(Debug)]
pub struct View {
    /// The items the dashboard's ignores and rules class otherwise, by position in the scan's.
    overrides: HashMap<usize, OrphanItem>,
    /// The scan's summary, counted with those classes.
    pub summary: OrphanSummary,
    /// What the count counts (the page shows it beside the count).
    pub count_scope: CountScope,
    /// Finding id -> position.
    pub index: HashMap<String, usize>,
    /// The JSON body of `GET /api/orphans` (without the scan information), built once.
    pub items_json: Vec<u8>,
}

impl View {
    /// The item at position `i` of `data` (the scan the view was built from), as the view classes it.
    pub fn item<'a>(&'a self, data: &'a OrphansData, i: usize) -> &'a OrphanItem {
        self.overrides.get(&i).unwrap_or(&data.report.items[i])
    }

    /// Every item of `data` (the scan the view was built from), as the view classes it.
    pub fn items<'a>(&'a self, data: &'a OrphansData) -> impl Iterator<Item = &'a OrphanItem> + 'a {
        (0..data.report.items.len()).map(move |i| self.item(data, i))
    }

    /// A report of `data`'s scan (with the view's summary) listing `items`.
    pub fn report(&self, data: &OrphansData, items: Vec<OrphanItem>) -> OrphanReport {
        OrphanReport {
            schema_version: data.report.schema_version,
            cluster: data.report.cluster.clone(),
            items,
            summary: self.summary.clone(),
        }
    }
}

/// Apply the dashboard's ignores (by id) and rules: a match is classed `ignored`, with the
/// note as its reason, like an `orphans --ignore` rule.
pub fn view(data: &OrphansData, state: &State, flags: &CliFlags) -> View {
    let ignored: HashMap<&str, &str> = state.ignores.iter().map(|i| (i.id.as_str(), i.note.as_str())).collect();
    let rules: Vec<ObjectRule> = state
        .rules
        .iter()
        .filter_map(|r| {
            let mut rule = parse_rule(&r.id, &r.rule).ok()?;
            if !r.note.is_empty() {
                rule.note = Some(r.note.clone());
            }
            Some(rule)
        })
        .collect();
    let mut overrides = HashMap::new();
    let mut dashboard_ignored = 0;
    let mut counts = crate::report::orphans::ClassCounts::default();
    let mut ids = Vec::with_capacity(data.report.items.len());
    for (i, item) in data.report.items.iter().enumerate() {
        let id = id_of(item);
        let reason = if let Some(note) = ignored.get(id.as_str()) {
            Some(if note.is_empty() {
                "ignored in the dashboard".to_string()
            } else {
                format!("ignored in the dashboard: {note}")
            })
        } else {
            rules.iter().find(|r| rule_matches(r, item)).map(ObjectRule::describe)
        };
        ids.push(id);
        let Some(reason) = reason else {
            counts.add(item);
            continue;
        };
        dashboard_ignored += usize::from(item.class == EvidenceClass::Orphan);
        let changed = OrphanItem { class: EvidenceClass::Ignored, reasons: vec![reason], ..item.clone() };
        counts.add(&changed);
        overrides.insert(i, changed);
    }
    let s = &data.report.summary;
    let kinds: Vec<ExaminedKind> = s.kinds.iter().filter_map(|k| ExaminedKind::of_kind(k)).collect();
    let summary = OrphanSummary {
        counts,
        namespace: s.namespace.clone(),
        kinds: kinds.iter().map(|k| k.kind().to_string()).collect(),
        older_than_seconds: s.older_than_seconds,
        skipped_kinds: s.skipped_kinds.clone(),
    };
    let count_scope = count_scope(&summary, dashboard_ignored, flags);
    let mut view = View { overrides, summary, count_scope, index: HashMap::new(), items_json: Vec::new() };
    #[derive(Serialize)]
    struct Finding<'a> {
        id: &'a str,
        #[serde(flatten)]
        item: &'a OrphanItem,
    }
    // Written straight to bytes: no JSON tree of every item is built first (at 2,000 releases that
    // tree was several times the body's 18 MB).
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Body<'a> {
        schema_version: u32,
        items: Vec<Finding<'a>>,
        summary: &'a OrphanSummary,
        count_scope: &'a CountScope,
    }
    let items: Vec<Finding> = ids.iter().zip(view.items(data)).map(|(id, item)| Finding { id, item }).collect();
    view.items_json = serde_json::to_vec(&Body {
        schema_version: data.report.schema_version,
        items,
        summary: &view.summary,
        count_scope: &view.count_scope,
    })
    .expect("the report serialises");
    view.index = ids.into_iter().enumerate().map(|(i, id)| (id, i)).collect();
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::serve::store::{Ignore, StoredRule};
    use crate::report::orphans::OrphanReport;

    fn item(kind: ExaminedKind, ns: Option<&str>, name: &str, class: EvidenceClass, sources: &[&str]) -> OrphanItem {
        let sources = sources.iter().map(|s| s.to_string()).collect();
        OrphanItem { sources, ..OrphanItem::sample(kind, ns, name, class) }
    }

    fn data() -> OrphansData {
        let report = OrphanReport::new(
            vec![
                item(ExaminedKind::ConfigMap, Some("apps"), "old", EvidenceClass::Orphan, &[]),
                item(ExaminedKind::Secret, Some("apps"), "tls-a", EvidenceClass::Orphan, &["manager:cert-manager"]),
                item(ExaminedKind::Secret, Some("apps"), "tls-b", EvidenceClass::Orphan, &["manager:cert-manager"]),
                item(ExaminedKind::Secret, Some("apps"), "db", EvidenceClass::InUse, &[]),
                item(ExaminedKind::StorageClass, None, "slow", EvidenceClass::Orphan, &[]),
            ],
            true,
            None,
            &[ExaminedKind::ConfigMap, ExaminedKind::Secret, ExaminedKind::StorageClass],
            3600,
        );
        OrphansData::new(report)
    }

    #[test]
    fn ids_and_their_checks() {
        let d = data();
        let ids: Vec<String> = d.report.items.iter().map(id_of).collect();
        assert!(ids.contains(&"StorageClass:slow".to_string()));
        assert!(ids.contains(&"ConfigMap:apps/old".to_string()));
        for id in &ids {
            check_id(id).unwrap();
        }
        assert!(check_id("Pod:apps/x").unwrap_err().contains("Pod:apps/x"));
        assert!(check_id("ConfigMap").is_err());
        assert!(check_id("ConfigMap:apps/").is_err());
        assert!(check_id("ConfigMap:a/b/c").is_err());
    }

    #[test]
    fn ignores_and_rules_reclass_and_recount() {
        let d = data();
        let rule = parse_rule("r1", "kind=Secret,source=manager:cert-manager").unwrap();
        assert_eq!(match_count(&d, &rule), 2);
        assert!(parse_rule("r2", "name_regex=(").unwrap_err().contains("dashboard rule r2"));
        let state = State {
            version: 1,
            ignores: vec![Ignore {
                id: "ConfigMap:apps/old".into(),
                note: "kept for the batch job".into(),
                created_at: "t".into(),
            }],
            rules: vec![StoredRule {
                id: "r1".into(),
                rule: "kind=Secret,source=manager:cert-manager".into(),
                note: "certificates".into(),
                created_at: "t".into(),
            }],
            last_rule: 1,
        };
        let v = view(&d, &state, &CliFlags::default());
        assert_eq!(v.summary.counts.orphan, 1);
        assert_eq!(v.summary.counts.ignored, 3);
        let old = v.item(&d, v.index["ConfigMap:apps/old"]);
        assert_eq!(old.class, EvidenceClass::Ignored);
        assert_eq!(old.reasons, vec!["ignored in the dashboard: kept for the batch job"]);
        let tls = v.item(&d, v.index["Secret:apps/tls-a"]);
        assert!(
            tls.reasons[0].contains("dashboard rule r1") && tls.reasons[0].contains("certificates"),
            "{:?}",
            tls.reasons
        );
        let json: serde_json::Value = serde_json::from_slice(&v.items_json).unwrap();
        assert_eq!(json["items"][0]["id"], "StorageClass:slow");
    }

    #[test]
    fn saved_scan_round_trips() {
        let mut d = data();
        d.report.items[0].leftover = true;
        d = OrphansData::new(d.report);
        let text = serde_json::to_string(&d).unwrap();
        let mut back: OrphansData = serde_json::from_str(&text).unwrap();
        back.restore().unwrap();
        assert_eq!(back.report, d.report);
    }

    #[test]
    fn the_cli_command_scans_what_the_server_scanned() {
        let mut summary = data().report.summary;
        let none = CliFlags::default();
        assert_eq!(cli_command(&summary, &none), "kubectl drift orphans -A");
        summary.namespace = Some("shop".into());
        summary.older_than_seconds = 0;
        assert_eq!(cli_command(&summary, &none), "kubectl drift orphans -n shop --older-than 0s");
        summary.older_than_seconds = 90_000;
        let flags = CliFlags { context: Some("prod eu".into()), config: Some("/etc/drift/drift.yaml".into()) };
        assert_eq!(
            cli_command(&summary, &flags),
            "kubectl drift orphans --context 'prod eu' -n shop --older-than 1d1h --config /etc/drift/drift.yaml"
        );
    }

    /// Issue 51: the page counted 3 where `kubectl drift orphans` counted 2. The server scans every
    /// namespace and the cluster-scoped kinds; the note beside the count says so and names `-A`.
    #[test]
    fn the_count_says_its_scope_and_what_only_the_dashboard_ignores() {
        let d = data();
        let v = view(&d, &State::default(), &CliFlags::default());
        assert_eq!(v.count_scope.dashboard_ignored, 0);
        assert_eq!(v.count_scope.cli_command, "kubectl drift orphans -A");
        let note = &v.count_scope.note;
        assert!(note.starts_with("4 orphans among 5 objects examined in every namespace"), "{note}");
        assert!(note.contains("cluster-scoped kinds (StorageClass)"), "{note}");
        assert!(note.contains("`kubectl drift orphans -A`") && note.contains("Without -A"), "{note}");
        let json: serde_json::Value = serde_json::from_slice(&v.items_json).unwrap();
        assert_eq!(json["countScope"]["cliCommand"], "kubectl drift orphans -A");
        assert_eq!(json["summary"]["orphan"], 4);

        // An ignore in the dashboard: one fewer on the page, and the note says why.
        let state = State {
            ignores: vec![Ignore { id: "ConfigMap:apps/old".into(), note: String::new(), created_at: "t".into() }],
            ..State::default()
        };
        let v = view(&d, &state, &CliFlags::default());
        assert_eq!((v.summary.counts.orphan, v.count_scope.dashboard_ignored), (3, 1));
        assert!(v.count_scope.note.contains("1 more is ignored by this dashboard"), "{}", v.count_scope.note);

        // One namespace: no -A, no cluster-scoped kind.
        let report = OrphanReport::new(
            vec![item(ExaminedKind::ConfigMap, Some("apps"), "old", EvidenceClass::Orphan, &[])],
            true,
            Some("apps".into()),
            &[ExaminedKind::ConfigMap],
            3600,
        );
        let v = view(&OrphansData::new(report), &State::default(), &CliFlags::default());
        assert_eq!(v.count_scope.cli_command, "kubectl drift orphans -n apps");
        assert!(
            v.count_scope.note.starts_with("1 orphan among 1 object examined in namespace apps"),
            "{}",
            v.count_scope.note
        );
        assert!(!v.count_scope.note.contains("Without -A"), "{}", v.count_scope.note);
    }
}
