//! Putting the evidence together: for each examined object its class, reasons and users.
//! Pure: takes the inventory, returns items; the unit tests below feed it objects in memory.

use super::duration::{parse_timestamp, short_duration};
use super::evidence::{certificate_secrets, managed_reasons, protected_reasons, HelmState};
use super::graph::{name_of, ns_of, str_at, ReferenceGraph};
use super::inventory::{Inventory, Source};
use super::kinds::ExaminedKind;
use super::report::{EvidenceClass, OrphanItem};
use super::rules::{object_sources, OrphanRules};
use super::usage::{is_candidate, judge, Existing, UsageContext, Verdict};

/// The user's policy for one scan.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub rules: OrphanRules,
    /// Objects younger than this are never called orphans.
    pub older_than_seconds: u64,
    /// Seconds since the epoch, "now" for ages.
    pub now: i64,
}

/// Class every examined object of `kinds` in the inventory.
pub fn classify(inv: &Inventory, kinds: &[ExaminedKind], policy: &Policy) -> Vec<OrphanItem> {
    let graph = ReferenceGraph::build(inv);
    let existing = Existing::from_inventory(inv);
    let helm = HelmState::from_inventory(inv);
    let certificates = certificate_secrets(inv);
    let ctx = UsageContext { graph: &graph, existing: &existing };
    let mut out = Vec::new();
    for &kind in kinds {
        for o in inv.get(Source::of_kind(kind)) {
            if kind.namespaced() {
                if let Some(ns) = &inv.namespace {
                    if ns_of(o) != ns {
                        continue;
                    }
                }
            }
            if !is_candidate(kind, o) {
                continue;
            }
            let verdict = judge(kind, o, &ctx);
            let release = helm.release_of(o);
            let protected = protected_reasons(kind, o);
            let managed = managed_reasons(kind, o, release.as_ref(), &certificates);
            let age = str_at(o, "/metadata/creationTimestamp").and_then(parse_timestamp).map(|t| policy.now - t);
            let (ns, name) = (ns_of(o), name_of(o));
            let sources = object_sources(o);
            let ignore = policy.rules.ignore.iter().find(|r| r.matches(kind.kind(), ns, name, &sources));
            let user_protect = policy.rules.protect.iter().find(|r| r.matches(kind.kind(), ns, name, &sources));

            let used_by = match &verdict {
                Verdict::Used(u) => u.clone(),
                Verdict::Unused(_) => Vec::new(),
            };
            let leftover = release.as_ref().is_some_and(|r| !r.installed);
            let (class, reasons) = if let Some(rule) = ignore {
                (EvidenceClass::Ignored, vec![rule.describe()])
            } else if !protected.is_empty() || user_protect.is_some() {
                let mut r = protected;
                if let Some(p) = user_protect {
                    r.push(format!("protected by {}", p.describe()));
                }
                (EvidenceClass::Protected, r)
            } else if let Verdict::Used(u) = &verdict {
                (EvidenceClass::InUse, vec![used_summary(u)])
            } else if !managed.is_empty() {
                (EvidenceClass::Managed, managed)
            } else {
                let Verdict::Unused(why) = &verdict else { unreachable!("used was handled above") };
                let mut r = vec![why.clone()];
                if let Some(rel) = release.as_ref().filter(|_| leftover) {
                    r.push(format!("leftover of Helm release {}/{}, which is no longer installed", rel.namespace, rel.name));
                }
                match age {
                    Some(a) if a < policy.older_than_seconds as i64 => {
                        r.insert(0, format!("younger than --older-than {} (created {} ago)", short_duration(policy.older_than_seconds as i64), short_duration(a)));
                        (EvidenceClass::Ignored, r)
                    }
                    _ => (EvidenceClass::Orphan, r),
                }
            };
            out.push(OrphanItem {
                api_version: str_at(o, "/apiVersion").unwrap_or("").to_string(),
                kind: kind.kind().to_string(),
                namespace: kind.namespaced().then(|| ns.to_string()),
                name: name.to_string(),
                class,
                reasons,
                used_by,
                age_seconds: age,
                helm_release: release,
                examined: kind,
                leftover: leftover && class == EvidenceClass::Orphan,
            });
        }
    }
    out
}

fn used_summary(uses: &[String]) -> String {
    match uses {
        [one] => format!("used by {one}"),
        [first, rest @ ..] => format!("used by {first} (+{} more)", rest.len()),
        [] => String::new(),
    }
}
