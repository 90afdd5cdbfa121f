//! The orphans report: what JSON and YAML serialise as is, and what the table, CSV and cleanup
//! scripts render. Its shape is documented in `docs/output.md` (section Orphans) and versioned
//! by `schemaVersion`. It holds names, never Secret data.

use serde::{Deserialize, Serialize};

use super::orphan_kinds::ExaminedKind;

pub const SCHEMA_VERSION: u32 = 2;

/// One class per object. Precedence: protected > in use > managed > orphan; a user's ignore
/// rule (or being younger than `--older-than`) overrides them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EvidenceClass {
    /// Nothing uses or manages it.
    #[serde(rename = "orphan")]
    Orphan,
    /// Something uses it (see `usedBy`).
    #[serde(rename = "in-use")]
    InUse,
    /// Something would recreate it; fix it at the source.
    #[serde(rename = "managed")]
    Managed,
    /// Never offered for deletion.
    #[serde(rename = "protected")]
    Protected,
    /// A user rule matched, or it is younger than `--older-than`.
    #[serde(rename = "ignored")]
    Ignored,
}

impl EvidenceClass {
    pub fn word(self) -> &'static str {
        match self {
            EvidenceClass::Orphan => "orphan",
            EvidenceClass::InUse => "in use",
            EvidenceClass::Managed => "managed",
            EvidenceClass::Protected => "protected",
            EvidenceClass::Ignored => "ignored",
        }
    }
}

/// One examined object and its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrphanItem {
    pub api_version: String,
    pub kind: String,
    /// `null` for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
    pub class: EvidenceClass,
    /// Why it has its class (for `in-use`, a summary; the users are in `usedBy`).
    pub reasons: Vec<String>,
    /// Everything found using it, whatever its class.
    pub used_by: Vec<String>,
    /// Seconds since creation (`null` if the server gave no creation time).
    pub age_seconds: Option<i64>,
    /// The Helm release named by its `meta.helm.sh/*` annotations.
    pub helm_release: Option<HelmRelease>,
    /// What an ignore rule's `source` matches: `helm:<release>`, `managed-by:<label>`,
    /// `manager:<fieldManager>` (names only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// Not serialised; a report read back (the dashboard's saved scan) restores it from `kind`.
    #[serde(skip)]
    pub examined: ExaminedKind,
    /// An orphan left behind by a Helm release that is no longer installed.
    #[serde(skip)]
    pub leftover: bool,
}

impl OrphanItem {
    /// A test item: 2 hours old, with the usual orphan reason, no sources, not a leftover.
    #[cfg(test)]
    pub fn sample(kind: ExaminedKind, namespace: Option<&str>, name: &str, class: EvidenceClass) -> OrphanItem {
        OrphanItem {
            api_version: "v1".into(),
            kind: kind.kind().into(),
            namespace: namespace.map(str::to_string),
            name: name.into(),
            class,
            reasons: vec!["no pod or pod template references it".into()],
            used_by: vec![],
            age_seconds: Some(7200),
            helm_release: None,
            sources: vec![],
            examined: kind,
            leftover: false,
        }
    }

    /// `Kind ns/name` or `Kind name`.
    pub fn title(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }
}

/// Counts over every examined object, whatever `--show` displays.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrphanSummary {
    /// How many examined objects are of each class (the JSON has them at this level).
    #[serde(flatten)]
    pub counts: ClassCounts,
    /// The scanned namespace, or `null` for all namespaces.
    pub namespace: Option<String>,
    /// The kinds examined.
    pub kinds: Vec<String>,
    pub older_than_seconds: u64,
    /// Custom resource kinds that were not read (over `--max-custom-objects`, forbidden,
    /// failed): the scan is incomplete (exit code 2), and what they could reference is
    /// `ignored`, never `orphan`.
    pub skipped_kinds: Vec<SkippedKind>,
}

/// How many examined objects a scan found of each class (the summary's counts).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassCounts {
    pub examined: usize,
    pub orphan: usize,
    /// Orphans left behind by an uninstalled Helm release (counted in `orphan` too).
    pub leftover: usize,
    pub in_use: usize,
    pub managed: usize,
    pub protected: usize,
    pub ignored: usize,
}

impl ClassCounts {
    /// Count one examined object.
    pub fn add(&mut self, item: &OrphanItem) {
        self.examined += 1;
        let class = match item.class {
            EvidenceClass::Orphan => {
                self.leftover += usize::from(item.leftover);
                &mut self.orphan
            }
            EvidenceClass::InUse => &mut self.in_use,
            EvidenceClass::Managed => &mut self.managed,
            EvidenceClass::Protected => &mut self.protected,
            EvidenceClass::Ignored => &mut self.ignored,
        };
        *class += 1;
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrphanReport {
    pub schema_version: u32,
    /// The cluster it is about: its kube context (or a server's `--cluster-name`).
    #[serde(default)]
    pub cluster: String,
    /// The objects shown: orphans only, or all examined objects with `--show all`.
    pub items: Vec<OrphanItem>,
    pub summary: OrphanSummary,
}

impl OrphanReport {
    /// Build the report from every examined object; `show_all` keeps the non-orphans in `items`.
    pub fn new(
        all: Vec<OrphanItem>,
        show_all: bool,
        namespace: Option<String>,
        kinds: &[ExaminedKind],
        older_than_seconds: u64,
    ) -> OrphanReport {
        let mut counts = ClassCounts::default();
        all.iter().for_each(|i| counts.add(i));
        let items = all.into_iter().filter(|i| OrphanReport::shows(show_all, i)).collect();
        OrphanReport::counted(items, counts, namespace, kinds, older_than_seconds)
    }

    /// Whether a report shows an item: every one with `--show all`, else the orphans.
    pub fn shows(show_all: bool, item: &OrphanItem) -> bool {
        show_all || item.class == EvidenceClass::Orphan
    }

    /// The report of the `items` it shows, of a scan whose examined objects `counts` counted (a
    /// scan keeps only the items it shows: on a big cluster most are in use).
    pub fn counted(
        mut items: Vec<OrphanItem>,
        counts: ClassCounts,
        namespace: Option<String>,
        kinds: &[ExaminedKind],
        older_than_seconds: u64,
    ) -> OrphanReport {
        items.sort_by(|a, b| {
            (&a.namespace, a.kind.as_str(), a.name.as_str()).cmp(&(&b.namespace, b.kind.as_str(), b.name.as_str()))
        });
        let summary = OrphanSummary {
            counts,
            namespace,
            kinds: kinds.iter().map(|k| k.kind().to_string()).collect(),
            older_than_seconds,
            skipped_kinds: Vec::new(),
        };
        OrphanReport { schema_version: SCHEMA_VERSION, cluster: String::new(), items, summary }
    }

    /// The scan's status: an error when a custom resource kind was not read (the scan is
    /// incomplete: never clean), else drifted when orphans were found.
    pub fn status(&self) -> crate::report::Status {
        crate::report::Status::judge(!self.summary.skipped_kinds.is_empty(), self.summary.counts.orphan > 0, false)
    }

    /// The orphans among the items (what a cleanup script acts on).
    pub fn orphans(&self) -> impl Iterator<Item = &OrphanItem> {
        self.items.iter().filter(|i| i.class == EvidenceClass::Orphan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON of `kubectl drift orphans -o json` (docs/output.md, section Orphans): every field,
    /// so one that is renamed, added or dropped changes this snapshot.
    #[test]
    fn a_scan_that_keeps_only_shown_items_reports_as_if_it_kept_all() {
        use EvidenceClass::*;
        let mut all: Vec<OrphanItem> = [Orphan, InUse, Managed, Protected, Ignored, Orphan, InUse]
            .into_iter()
            .enumerate()
            .map(|(n, c)| OrphanItem::sample(ExaminedKind::ConfigMap, Some("shop"), &format!("cm-{}", 9 - n), c))
            .collect();
        all[0].leftover = true;
        let kinds = [ExaminedKind::ConfigMap];
        for show_all in [false, true] {
            let mut counts = ClassCounts::default();
            let mut shown = Vec::new();
            for item in all.iter().cloned() {
                counts.add(&item);
                if OrphanReport::shows(show_all, &item) {
                    shown.push(item);
                }
            }
            let kept = OrphanReport::counted(shown, counts, Some("shop".into()), &kinds, 60);
            assert_eq!(kept, OrphanReport::new(all.clone(), show_all, Some("shop".into()), &kinds, 60));
            let s = &kept.summary.counts;
            assert_eq!(
                (s.examined, s.orphan, s.leftover, s.in_use, s.managed, s.protected, s.ignored),
                (7, 2, 1, 2, 1, 1, 1)
            );
            assert_eq!(kept.items.len(), if show_all { 7 } else { 2 });
        }
    }

    #[test]
    fn orphans_report_schema() {
        let item =
            |kind: ExaminedKind, name: &str, class: EvidenceClass| OrphanItem::sample(kind, Some("shop"), name, class);
        let mut leftover = item(ExaminedKind::ConfigMap, "old-settings", EvidenceClass::Orphan);
        leftover.sources = vec!["helm:old".into(), "manager:helm".into()];
        leftover.helm_release = Some(HelmRelease { name: "old".into(), namespace: "shop".into(), installed: false });
        leftover.leftover = true;
        let mut used = item(ExaminedKind::Secret, "creds", EvidenceClass::InUse);
        used.reasons = vec!["used by 1 object".into()];
        used.used_by = vec!["Deployment shop/web spec.template.spec.volumes[creds]".into()];
        let kinds = [ExaminedKind::ConfigMap, ExaminedKind::Secret];
        let mut report = OrphanReport::new(vec![leftover, used], true, Some("shop".into()), &kinds, 3600);
        report.summary.skipped_kinds = vec![SkippedKind {
            resource: "widgets.example.com".into(),
            kind: "Widget".into(),
            namespace: Some("shop".into()),
            namespaced: true,
            reason: "more than 10000 objects (--max-custom-objects)".into(),
        }];
        insta::assert_snapshot!("orphans_report_schema", serde_json::to_string_pretty(&report).unwrap());
    }
}

/// The Helm release an object names in its `meta.helm.sh/*` annotations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelmRelease {
    pub name: String,
    pub namespace: String,
    /// Whether Helm's storage still holds the release (any status but `uninstalled`).
    pub installed: bool,
}

/// A custom resource kind that was not read: its objects could reference what the scan
/// examines, so nothing they could reference is called an orphan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedKind {
    /// `plural.group`, as kubectl names it.
    pub resource: String,
    pub kind: String,
    /// The namespace it was to be read in; `null` for all namespaces or a cluster-scoped kind.
    pub namespace: Option<String>,
    pub namespaced: bool,
    /// Why: over the cap (with the count), forbidden, or the error.
    pub reason: String,
}

impl SkippedKind {
    /// Whether an object in `namespace` could be referenced by the skipped kind's objects.
    pub fn covers(&self, namespace: &str) -> bool {
        !self.namespaced || self.namespace.as_deref().is_none_or(|n| n == namespace)
    }
}
