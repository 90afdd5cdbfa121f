//! What `upgrade` predicts for one `helm upgrade` (docs/upgrade.md): every difference between the
//! release's current manifest, the new render and the live objects, each in one class (what will
//! block the upgrade, which hand edits it overwrites or keeps, what the chart or values change,
//! which objects it creates or deletes), with who edited a field and when, and the error Helm
//! would hit. Secret values are redacted before they get here (the engine does it).

use serde::Serialize;
use serde_json::Value;

use super::adopt::ObjectRef;
use super::path::FieldPath;

/// How Helm will write the objects: its three-way merge patch (Helm 3, and Helm 4 on a release
/// recorded client-side) or server-side apply (Helm 4 on a release recorded `ssa`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApplyMethod {
    /// Client-side: `CreateThreeWayMergePatch(current manifest, new render, live)`.
    ThreeWayMerge,
    /// Server-side apply as field manager `helm`.
    ServerSideApply,
}

impl ApplyMethod {
    pub fn label(self) -> &'static str {
        match self {
            ApplyMethod::ThreeWayMerge => "three-way merge (client-side)",
            ApplyMethod::ServerSideApply => "server-side apply",
        }
    }
}

/// One class per difference; the order is the order they are shown in (blocking first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum UpgradeClass {
    /// The upgrade will fail on this object (an immutable field, a server-side apply conflict,
    /// an object that exists but is not the release's).
    Blocking,
    /// A hand edit the upgrade overwrites (or removes).
    Overwritten,
    /// The new render differs from the current manifest.
    ChartChange,
    /// An object the upgrade creates.
    Create,
    /// An object the upgrade deletes.
    Delete,
    /// A hand edit the upgrade leaves as it is.
    Kept,
}

impl UpgradeClass {
    pub const ALL: [UpgradeClass; 6] = [
        UpgradeClass::Blocking,
        UpgradeClass::Overwritten,
        UpgradeClass::ChartChange,
        UpgradeClass::Create,
        UpgradeClass::Delete,
        UpgradeClass::Kept,
    ];

    /// The rule id of the CI formats (`upgrade/blocking`).
    pub fn id(self) -> &'static str {
        match self {
            UpgradeClass::Blocking => "upgrade/blocking",
            UpgradeClass::Overwritten => "upgrade/overwritten",
            UpgradeClass::ChartChange => "upgrade/chart-change",
            UpgradeClass::Create => "upgrade/create",
            UpgradeClass::Delete => "upgrade/delete",
            UpgradeClass::Kept => "upgrade/kept",
        }
    }

    /// The section title in text output.
    pub fn title(self) -> &'static str {
        match self {
            UpgradeClass::Blocking => "will block the upgrade",
            UpgradeClass::Overwritten => "hand edits the upgrade overwrites",
            UpgradeClass::ChartChange => "chart or values changes",
            UpgradeClass::Create => "objects the upgrade creates",
            UpgradeClass::Delete => "objects the upgrade deletes",
            UpgradeClass::Kept => "hand edits the upgrade keeps",
        }
    }
}

/// One predicted change (or one hand edit kept).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeChange {
    pub class: UpgradeClass,
    pub object: ObjectRef,
    /// The field; `None` for a whole object (created, deleted, already there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<FieldPath>,
    /// In the release's current manifest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<Value>,
    /// In the new render.
    #[serde(rename = "new", skip_serializing_if = "Option::is_none")]
    pub rendered: Option<Value>,
    /// Live now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Value>,
    /// The field manager that owns the field live (a hand edit's tool, a conflict's owner).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    /// When that manager last wrote the object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// The values that render the field in the new chart and changed (`image.tag`), where the
    /// sentinel render can tell.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<FieldPath>,
    /// What happens, in words (`re-added`, `removed`, `set to the new render's value`...).
    pub why: String,
    /// For a blocking change: the error Helm would hit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For a deleted object: the live objects that still reference it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub referenced_by: Vec<String>,
}

impl UpgradeChange {
    /// A change of a whole object (created, deleted, deleted by hand), or the start of one of a
    /// field (struct update syntax sets the rest).
    pub fn whole(class: UpgradeClass, object: ObjectRef, why: String) -> UpgradeChange {
        UpgradeChange {
            class,
            object,
            path: None,
            current: None,
            rendered: None,
            live: None,
            manager: None,
            time: None,
            values: Vec::new(),
            why,
            error: None,
            referenced_by: Vec::new(),
        }
    }
}

/// The prediction for one release.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeReport {
    pub release: String,
    pub namespace: String,
    /// The revision compared (the deployed one) and the one the upgrade would write.
    pub revision: u32,
    /// The chart now: `name-version`.
    pub chart: String,
    /// The chart the upgrade installs, as given (`./chart`, `repo/name`, `oci://...`), with its
    /// version when the render's Chart.yaml said it.
    pub new_chart: String,
    pub apply_method: ApplyMethod,
    /// `--force-conflicts` was given (server-side apply conflicts overwrite instead of block).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub force_conflicts: bool,
    pub changes: Vec<UpgradeChange>,
}

impl UpgradeReport {
    /// How many changes of a class.
    pub fn count(&self, class: UpgradeClass) -> usize {
        self.changes.iter().filter(|c| c.class == class).count()
    }

    /// Whether the upgrade changes anything live (kept hand edits change nothing).
    pub fn changes_anything(&self) -> bool {
        self.changes.iter().any(|c| c.class != UpgradeClass::Kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_shown_blocking_first_and_kept_last() {
        let mut sorted = UpgradeClass::ALL;
        sorted.sort();
        assert_eq!(sorted, UpgradeClass::ALL);
        assert_eq!(sorted[0], UpgradeClass::Blocking);
        let json = serde_json::to_value(UpgradeClass::ChartChange).unwrap();
        assert_eq!(json, "chartChange");
        assert_eq!(serde_json::to_value(ApplyMethod::ServerSideApply).unwrap(), "server-side-apply");
    }
}
