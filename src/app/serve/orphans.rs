//! The orphans scope: the saved scan (every examined object with its class), and the view the
//! API shows, with the dashboard's ignores and rules applied on top of the config's rules.
//! Finding ids are `Kind:namespace/name` (`Kind:name` when cluster-scoped): the same text
//! `orphans --ignore` takes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Read, Write};

use axum::body::Bytes;
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

/// The saved orphans scan: its report with the items (every examined object, `--show all`,
/// classed with the config's rules only) kept packed. On the bench's 2,000-release cluster they
/// are 34,552 objects, 16.6 MB as lines of JSON and 1.3 MB packed; the server holds one scan
/// between scans and two while a scan runs, so they are decoded one at a time as they are read
/// ([`OrphansData::items`]). Saved and read back as the report's JSON.
#[derive(Debug, Clone)]
pub struct OrphansData {
    /// The report without its items.
    head: OrphanReport,
    /// The items, each as a line of JSON, deflated.
    packed: Bytes,
    len: usize,
    /// Ids of the orphans left behind by uninstalled Helm releases (not in the report's JSON).
    leftover: BTreeSet<String>,
}

impl OrphansData {
    pub fn new(mut report: OrphanReport) -> OrphansData {
        let items = std::mem::take(&mut report.items);
        let leftover = items.iter().filter(|i| i.leftover).map(id_of).collect();
        let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        for item in &items {
            serde_json::to_writer(&mut deflate, item).expect("an orphans item serialises");
            deflate.write_all(b"\n").expect("deflating into memory");
        }
        let packed = Bytes::from(deflate.finish().expect("deflating into memory"));
        OrphansData { head: report, packed, len: items.len(), leftover }
    }

    /// The report without its items: schema version, cluster and summary.
    pub fn head(&self) -> &OrphanReport {
        &self.head
    }

    /// How many items the scan has.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every item in the scan's order, each decoded as it is taken, with the fields its JSON does
    /// not carry (the examined kind, whether it is left over) restored.
    pub fn items(&self) -> impl Iterator<Item = OrphanItem> + '_ {
        let inflate = std::io::BufReader::new(flate2::read::DeflateDecoder::new(&self.packed[..]));
        serde_json::Deserializer::from_reader(inflate).into_iter::<OrphanItem>().map(|item| {
            let mut item = item.expect("the scan's own packed items decode");
            item.examined = ExaminedKind::of_kind(&item.kind).expect("a packed item's kind was examined");
            // (Most scans have no leftovers: no id is made for them.)
            item.leftover = !self.leftover.is_empty() && self.leftover.contains(&id_of(&item));
            item
        })
    }

    /// The whole report, items decoded.
    pub fn report(&self) -> OrphanReport {
        OrphanReport { items: self.items().collect(), ..self.head.clone() }
    }
}

impl Serialize for OrphansData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeSeq, SerializeStruct};
        // Written as the report's own JSON, the items one at a time.
        struct Items<'a>(&'a OrphansData);
        impl Serialize for Items<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.len))?;
                for item in self.0.items() {
                    seq.serialize_element(&item)?;
                }
                seq.end()
            }
        }
        struct Report<'a>(&'a OrphansData);
        impl Serialize for Report<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let head = &self.0.head;
                let mut st = s.serialize_struct("OrphanReport", 4)?;
                st.serialize_field("schemaVersion", &head.schema_version)?;
                st.serialize_field("cluster", &head.cluster)?;
                st.serialize_field("items", &Items(self.0))?;
                st.serialize_field("summary", &head.summary)?;
                st.end()
            }
        }
        let mut st = s.serialize_struct("OrphansData", 2)?;
        st.serialize_field("report", &Report(self))?;
        st.serialize_field("leftover", &self.leftover)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for OrphansData {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<OrphansData, D::Error> {
        #[derive(Deserialize)]
        struct Saved {
            report: OrphanReport,
            leftover: Vec<String>,
        }
        let Saved { mut report, leftover } = Saved::deserialize(d)?;
        let leftover: BTreeSet<String> = leftover.into_iter().collect();
        for item in &mut report.items {
            item.examined = ExaminedKind::of_kind(&item.kind)
                .ok_or_else(|| serde::de::Error::custom(format!("unknown kind {:?}", item.kind)))?;
            item.leftover = leftover.contains(&id_of(item));
        }
        Ok(OrphansData::new(report))
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
    data.items().filter(|i| i.class == EvidenceClass::Orphan && rule_matches(rule, i)).count()
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
/// two.
#[derive(Debug)]
pub struct View {
    /// The items the dashboard's ignores and rules class otherwise, by position in the scan's.
    overrides: HashMap<usize, OrphanItem>,
    /// The scan's summary, counted with those classes.
    pub summary: OrphanSummary,
    /// What the count counts (the page shows it beside the count).
    pub count_scope: CountScope,
    /// Every finding id, in order, end to end ([`View::position`]).
    ids: String,
    /// Where each id of `ids` ends, and its item's position in the scan.
    by_id: Vec<(u32, u32)>,
    /// The items counted by namespace (empty: cluster-scoped), kind and class, as `/metrics`
    /// shows them.
    pub counts: Vec<((String, String, EvidenceClass), u64)>,
    /// The JSON body of `GET /api/orphans` (without the scan information), built once and kept
    /// deflated ([`View::items_json`], [`View::items_json_chunks`]): on the bench's
    /// 2,000-release cluster 18.1 MB of JSON, 1.5 MB deflated.
    items_json: Bytes,
}

impl View {
    /// The position of the item whose finding id is `id` in the scan the view was built from.
    pub fn position(&self, id: &str) -> Option<usize> {
        let start = |k: usize| if k == 0 { 0 } else { self.by_id[k - 1].0 as usize };
        let id_at = |k: usize| &self.ids[start(k)..self.by_id[k].0 as usize];
        let (mut lo, mut hi) = (0, self.by_id.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match id_at(mid).cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.by_id[mid].1 as usize),
            }
        }
        None
    }

    /// The JSON body of `GET /api/orphans` (without the scan information), inflated whole.
    pub fn items_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut inflate = flate2::read::DeflateDecoder::new(&self.items_json[..]);
        inflate.read_to_end(&mut out).expect("the view's own deflated bytes inflate");
        out
    }

    /// The same body inflated a piece at a time, for a response that streams it: a request holds
    /// one piece of it, not the whole.
    pub fn items_json_chunks(&self) -> impl Iterator<Item = Bytes> + Send + 'static {
        let mut inflate = flate2::read::DeflateDecoder::new(std::io::Cursor::new(self.items_json.clone()));
        std::iter::from_fn(move || {
            let mut chunk = vec![0; 64 * 1024];
            let mut filled = 0;
            while filled < chunk.len() {
                match inflate.read(&mut chunk[filled..]).expect("the view's own deflated bytes inflate") {
                    0 => break,
                    n => filled += n,
                }
            }
            chunk.truncate(filled);
            (filled > 0).then(|| Bytes::from(chunk))
        })
    }

    /// Every item of `data` (the scan the view was built from), as the view classes it, each
    /// decoded as it is taken.
    pub fn items<'a>(&'a self, data: &'a OrphansData) -> impl Iterator<Item = OrphanItem> + 'a {
        data.items().enumerate().map(|(i, item)| self.overrides.get(&i).cloned().unwrap_or(item))
    }

    /// The items at `positions` of `data` (the scan the view was built from), in that order, as
    /// the view classes them: one pass over the scan.
    pub fn items_at(&self, data: &OrphansData, positions: &[usize]) -> Vec<OrphanItem> {
        let wanted: std::collections::BTreeSet<usize> = positions.iter().copied().collect();
        let found: HashMap<usize, OrphanItem> =
            self.items(data).enumerate().filter(|(i, _)| wanted.contains(i)).collect();
        positions.iter().filter_map(|i| found.get(i).cloned()).collect()
    }

    /// A report of `data`'s scan (with the view's summary) listing `items`.
    pub fn report(&self, data: &OrphansData, items: Vec<OrphanItem>) -> OrphanReport {
        OrphanReport { items, summary: self.summary.clone(), ..data.head().clone() }
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
    let mut by_group: BTreeMap<(String, String, EvidenceClass), u64> = BTreeMap::new();
    let mut ids = Vec::with_capacity(data.len());
    for (i, item) in data.items().enumerate() {
        let id = id_of(&item);
        let reason = if let Some(note) = ignored.get(id.as_str()) {
            Some(if note.is_empty() {
                "ignored in the dashboard".to_string()
            } else {
                format!("ignored in the dashboard: {note}")
            })
        } else {
            rules.iter().find(|r| rule_matches(r, &item)).map(ObjectRule::describe)
        };
        ids.push(id);
        let item = match reason {
            None => item,
            Some(reason) => {
                dashboard_ignored += usize::from(item.class == EvidenceClass::Orphan);
                let changed = OrphanItem { class: EvidenceClass::Ignored, reasons: vec![reason], ..item };
                overrides.insert(i, changed.clone());
                changed
            }
        };
        counts.add(&item);
        *by_group.entry((item.namespace.unwrap_or_default(), item.kind, item.class)).or_default() += 1;
    }
    let s = &data.head().summary;
    let kinds: Vec<ExaminedKind> = s.kinds.iter().filter_map(|k| ExaminedKind::of_kind(k)).collect();
    let summary = OrphanSummary {
        counts,
        namespace: s.namespace.clone(),
        kinds: kinds.iter().map(|k| k.kind().to_string()).collect(),
        older_than_seconds: s.older_than_seconds,
        skipped_kinds: s.skipped_kinds.clone(),
    };
    let count_scope = count_scope(&summary, dashboard_ignored, flags);
    let mut view = View {
        overrides,
        summary,
        count_scope,
        ids: String::new(),
        by_id: Vec::new(),
        counts: by_group.into_iter().collect(),
        items_json: Bytes::new(),
    };
    // Written straight to deflated bytes, each item decoded as it is written: no JSON tree, no
    // body and no list of every item is ever held whole.
    struct Findings<'a>(&'a View, &'a OrphansData, &'a [String]);
    impl Serialize for Findings<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeSeq;
            #[derive(Serialize)]
            struct Finding<'a> {
                id: &'a str,
                #[serde(flatten)]
                item: &'a OrphanItem,
            }
            let mut seq = s.serialize_seq(Some(self.2.len()))?;
            for (id, item) in self.2.iter().zip(self.0.items(self.1)) {
                seq.serialize_element(&Finding { id, item: &item })?;
            }
            seq.end()
        }
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Body<'a> {
        schema_version: u32,
        items: Findings<'a>,
        summary: &'a OrphanSummary,
        count_scope: &'a CountScope,
    }
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    serde_json::to_writer(
        &mut deflate,
        &Body {
            schema_version: data.head().schema_version,
            items: Findings(&view, data, &ids),
            summary: &view.summary,
            count_scope: &view.count_scope,
        },
    )
    .expect("the report serialises");
    view.items_json = Bytes::from(deflate.finish().expect("deflating into memory"));
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by(|&a, &b| ids[a].cmp(&ids[b]));
    view.ids.reserve(ids.iter().map(String::len).sum());
    for i in order {
        view.ids.push_str(&ids[i]);
        view.by_id.push((view.ids.len() as u32, i as u32));
    }
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
        let ids: Vec<String> = d.items().map(|i| id_of(&i)).collect();
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
        let at = |id: &str| v.items_at(&d, &[v.position(id).unwrap()]).remove(0);
        let old = at("ConfigMap:apps/old");
        assert_eq!(old.class, EvidenceClass::Ignored);
        assert_eq!(old.reasons, vec!["ignored in the dashboard: kept for the batch job"]);
        let tls = at("Secret:apps/tls-a");
        assert!(
            tls.reasons[0].contains("dashboard rule r1") && tls.reasons[0].contains("certificates"),
            "{:?}",
            tls.reasons
        );
        assert_eq!(v.position("ConfigMap:apps/older"), None);
        assert_eq!(v.position("ConfigMap:apps/ol"), None);
        assert_eq!(v.position(""), None);
        for (i, item) in d.items().enumerate() {
            assert_eq!(v.position(&id_of(&item)), Some(i));
        }
        // Several at once, in the order asked, each as the view classes it.
        let picked =
            v.items_at(&d, &[v.position("Secret:apps/db").unwrap(), v.position("ConfigMap:apps/old").unwrap()]);
        assert_eq!(
            picked.iter().map(|i| (i.name.as_str(), i.class)).collect::<Vec<_>>(),
            [("db", EvidenceClass::InUse), ("old", EvidenceClass::Ignored)]
        );
        // What /metrics shows, counted as the view classes them.
        let count = |ns: &str, kind: &str, class| {
            v.counts.iter().find(|((n, k, c), _)| n == ns && k == kind && *c == class).map(|(_, n)| *n)
        };
        assert_eq!(count("apps", "Secret", EvidenceClass::Ignored), Some(2));
        assert_eq!(count("apps", "Secret", EvidenceClass::InUse), Some(1));
        assert_eq!(count("", "StorageClass", EvidenceClass::Orphan), Some(1));
        assert_eq!(v.counts.iter().map(|(_, n)| n).sum::<u64>(), 5);
        let json: serde_json::Value = serde_json::from_slice(&v.items_json()).unwrap();
        assert_eq!(json["items"][0]["id"], "StorageClass:slow");
        assert_eq!(v.items_json_chunks().collect::<Vec<_>>().concat(), v.items_json());
    }

    #[test]
    fn saved_scan_round_trips() {
        let mut report = data().report();
        report.items[0].leftover = true;
        let d = OrphansData::new(report.clone());
        assert_eq!(d.report(), report);
        assert_eq!(d.items().filter(|i| i.leftover).count(), 1);
        // Saved as the report's own JSON, and the leftover ids beside it.
        let text = serde_json::to_string(&d).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["report"], serde_json::to_value(&report).unwrap());
        assert_eq!(json["leftover"], serde_json::json!([id_of(&report.items[0])]));
        let back: OrphansData = serde_json::from_str(&text).unwrap();
        assert_eq!(back.report(), report);
        // A kind no scan examines is refused, named.
        let bad = text.replace("\"kind\":\"StorageClass\"", "\"kind\":\"Pod\"");
        assert_ne!(bad, text);
        let e = serde_json::from_str::<OrphansData>(&bad).unwrap_err().to_string();
        assert!(e.contains("unknown kind \"Pod\""), "{e}");
    }

    #[test]
    fn the_cli_command_scans_what_the_server_scanned() {
        let mut summary = data().head().summary.clone();
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
        let json: serde_json::Value = serde_json::from_slice(&v.items_json()).unwrap();
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
