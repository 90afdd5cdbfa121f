//! `upgrade RELEASE CHART`: what `helm upgrade` would do, before it runs (docs/upgrade.md).
//!
//! 1. The release's drift, as `adopt` reads it (`adopt::release_drift`, the one release check):
//!    the current manifest, the live objects, every hand edit with who and when.
//! 2. The new revision rendered with `helm template` and the cluster's capabilities, with the
//!    values `helm upgrade` would use (`--reuse-values`, `--reset-then-reuse-values`, or the
//!    previous values when none are given, as Helm's `reuseValues` decides), hooks left out.
//! 3. [`classify`]: the three sides compared, one class per difference, with Helm's apply method
//!    read from the release (`apply_method: ssa` is server-side apply).
//! 4. Objects the upgrade creates that already exist and are not the release's block it (Helm's
//!    "invalid ownership metadata"); objects it deletes are named with what still references
//!    them (the orphans engine's reference graph); each chart change is traced to the values
//!    that render it and changed (a render with adopt's sentinel values).
//!
//! Nothing is written to the cluster: the render is local and the rest are reads.

pub(crate) mod classify;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::engine::adopt::values::{merged, sentinel_values};
use crate::engine::adopt::{AdoptError, AdoptOptions, Scratch, locate, release_drift};
use crate::engine::compare::CompareContext;
use crate::engine::compare::rules::IgnoreRule;
use crate::engine::drift::{Engine, helm_deployers, helm_metadata};
use crate::engine::orphans::graph::ReferenceGraph;
use crate::engine::orphans::inventory::collect;
use crate::report::ObjectState;
use crate::report::adopt::values_yaml;
use crate::report::orphan_kinds::ExaminedKind;
use crate::report::path::FieldPath;
use crate::report::progress::NoProgress;
use crate::report::upgrade::{ApplyMethod, UpgradeChange, UpgradeClass, UpgradeReport};
use crate::source::cluster::Cluster;
use crate::source::helm::render::{RenderError, RenderSettings, render_chart};
use crate::source::manifest::{DesiredObject, parse_stream};

use classify::{Method, Sides, key_of};

/// Which values the upgrade renders with, as `helm upgrade`'s flags choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValuesMode {
    /// No flag: the previous user values when no value is given, else only the ones given.
    #[default]
    Default,
    /// `--reuse-values`: the previous values (over the previous chart's defaults) under the new.
    Reuse,
    /// `--reset-then-reuse-values`: the new chart's defaults, the previous user values, the new.
    ResetThenReuse,
    /// `--reset-values`: only the values given.
    Reset,
}

/// What to predict.
#[derive(Debug, Clone)]
pub struct UpgradeOptions {
    pub release: String,
    pub namespace: String,
    /// The chart as `helm upgrade` takes it.
    pub chart: String,
    pub version: Option<String>,
    pub devel: bool,
    /// `-f` files, in order.
    pub values_files: Vec<PathBuf>,
    /// `--set`, `--set-string`, `--set-json`, `--set-file`, each as (flag, argument), in order.
    pub sets: Vec<(String, String)>,
    pub values_mode: ValuesMode,
    pub helm: PathBuf,
    pub show_secrets: bool,
    pub rules: Vec<IgnoreRule>,
    pub force_conflicts: bool,
    pub render_timeout: Duration,
}

/// Why the prediction could not be made.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError {
    /// The release, its chart or its drift could not be read (as `adopt` reads them).
    #[error(transparent)]
    Release(#[from] AdoptError),
    /// `helm template` failed for the new chart.
    #[error("release {release}: rendering {chart}: {source}")]
    Render {
        release: String,
        chart: String,
        #[source]
        source: RenderError,
    },
    /// The new render holds a document that does not parse.
    #[error("release {release}: the render of {chart} does not parse: {message}")]
    Parse { release: String, chart: String, message: String },
    /// A LIST for the objects to create or the references failed.
    #[error("release {release}: {what}: {message}")]
    Live { release: String, what: &'static str, message: String },
}

/// Predict one upgrade (the steps are the module documentation's).
pub async fn predict(cluster: &Cluster, opts: &UpgradeOptions) -> Result<UpgradeReport, UpgradeError> {
    let adopt = AdoptOptions {
        release: opts.release.clone(),
        namespace: opts.namespace.clone(),
        helm: opts.helm.clone(),
        show_secrets: true,
        rules: opts.rules.clone(),
        render_timeout: opts.render_timeout,
        // A value changed at admission is never a hand edit the upgrade overwrites or keeps.
        admission_changes: crate::engine::compare::AdmissionChanges::Ignore,
    };
    let drift = release_drift(cluster, &adopt).await?;
    let release = &drift.decoded.release;
    let scratch = Scratch::new()?;
    let settings = drift.render_settings(cluster, opts.helm.clone(), opts.render_timeout).await;
    let old_merged = merged(&drift.chart.default_values(), &release.values());
    let previous = match opts.values_mode {
        ValuesMode::Reuse => Some(old_merged.clone()),
        ValuesMode::ResetThenReuse => Some(release.values()),
        ValuesMode::Default if opts.values_files.is_empty() && opts.sets.is_empty() => Some(release.values()),
        _ => None,
    };
    let previous_file = match &previous {
        Some(v) => Some(scratch.values("previous.yaml", &values_yaml(v))?),
        None => None,
    };
    let render_err = |source| UpgradeError::Render { release: drift.label.clone(), chart: opts.chart.clone(), source };
    let mut args: Vec<OsString> = Vec::new();
    if let Some(v) = &opts.version {
        args.extend(["--version".into(), v.into()]);
    }
    if opts.devel {
        args.push("--devel".into());
    }
    let mut value_args = Vec::new();
    for f in previous_file.iter().chain(&opts.values_files) {
        value_args.extend([OsString::from("--values"), f.into()]);
    }
    for (flag, arg) in &opts.sets {
        value_args.extend([OsString::from(flag), arg.into()]);
    }
    let text =
        render_chart(&settings, opts.chart.as_ref(), &[args.clone(), value_args].concat()).map_err(render_err)?;
    let rendered = objects(&text, release, opts)?;

    let method = Method {
        apply: if release.apply_method.as_deref() == Some("ssa") {
            ApplyMethod::ServerSideApply
        } else {
            ApplyMethod::ThreeWayMerge
        },
        force_conflicts: opts.force_conflicts,
        show_secrets: opts.show_secrets,
    };
    let sides = Sides {
        namespace: &opts.namespace,
        current: &drift.stored,
        rendered: &rendered,
        drift: &drift.check.report.objects,
        live: &drift.check.live,
    };
    let mut changes = classify::classify(&sides, method);
    let label = drift.label.clone();
    existing(&drift.engine, &label, &opts.namespace, &rendered, &mut changes).await?;
    references(&drift.engine, &label, &opts.namespace, &mut changes).await?;
    // Tracing is a help, never a condition: a chart that does not render with sentinel values
    // (a schema, a `required`) leaves its changes without a value named.
    let new_defaults = show_values(&settings, opts, &args);
    if let Some(defaults) = new_defaults {
        let mut new_merged = match opts.values_mode {
            ValuesMode::Reuse => old_merged.clone(),
            _ => defaults,
        };
        for v in previous.iter().cloned().chain(opts.values_files.iter().filter_map(read_values)) {
            new_merged = merged(&new_merged, &v);
        }
        trace(&settings, &scratch, opts, &old_merged, &new_merged, &rendered, &mut changes);
    }
    let version = rendered_chart_version(&text);
    Ok(UpgradeReport {
        release: release.name.clone(),
        namespace: opts.namespace.clone(),
        revision: release.revision,
        chart: format!("{}-{}", release.chart_name(), release.chart_version()),
        new_chart: match version {
            Some(v) => format!("{} ({v})", opts.chart),
            None => opts.chart.clone(),
        },
        apply_method: method.apply,
        force_conflicts: opts.force_conflicts,
        changes,
    })
}

/// The rendered stream's objects, hooks left out (an upgrade runs them, it does not apply them
/// as the release's objects), with Helm's metadata.
fn objects(
    text: &str,
    release: &crate::source::helm::Release,
    opts: &UpgradeOptions,
) -> Result<Vec<DesiredObject>, UpgradeError> {
    let (mut objects, errors) = parse_stream(text, &format!("render of {}", opts.chart));
    if let Some(e) = errors.first() {
        return Err(UpgradeError::Parse {
            release: format!("{}/{}", opts.namespace, opts.release),
            chart: opts.chart.clone(),
            message: e.to_string(),
        });
    }
    objects.retain(|d| d.body.pointer("/metadata/annotations/helm.sh~1hook").is_none());
    helm_metadata(&mut objects, &release.name, &release.namespace);
    Ok(objects)
}

/// The chart version the render's `# Source:` lines do not give: read from a `helm.sh/chart`
/// label (`name-version`) on any object, when the chart sets one.
fn rendered_chart_version(text: &str) -> Option<String> {
    text.lines().find_map(|l| l.trim().strip_prefix("helm.sh/chart:").map(|v| v.trim().trim_matches('"').to_string()))
}

/// Step 4: an object to create that exists already blocks the upgrade unless it carries the
/// release's ownership metadata (then Helm takes it over).
async fn existing(
    engine: &Engine,
    label: &str,
    namespace: &str,
    rendered: &[DesiredObject],
    changes: &mut [UpgradeChange],
) -> Result<(), UpgradeError> {
    let created: Vec<DesiredObject> = rendered
        .iter()
        .filter(|d| {
            changes
                .iter()
                .any(|c| c.class == UpgradeClass::Create && c.object.kind == d.kind && c.object.name == d.name)
        })
        .cloned()
        .collect();
    if created.is_empty() {
        return Ok(());
    }
    let ctx = CompareContext { deployers: helm_deployers(), ..Default::default() };
    let outcome = engine.check_objects(&created, namespace, &ctx, None).await;
    if let Some(e) = outcome.errors.first() {
        return Err(UpgradeError::Live {
            release: label.into(),
            what: "reading the objects to create",
            message: e.clone(),
        });
    }
    let (release, release_ns) = label.split_once('/').map(|(n, r)| (r, n)).unwrap_or((label, namespace));
    for d in &created {
        let k = key_of(d, namespace);
        let missing = outcome.objects.iter().any(|o| o.kind == k.0 && o.name == k.2 && o.state == ObjectState::Missing);
        let Some(live) = classify::live_of(&outcome.live, &k).filter(|_| !missing) else { continue };
        let annotation = |a: &str| live.pointer(&format!("/metadata/annotations/{a}")).and_then(Value::as_str);
        let owned = annotation("meta.helm.sh~1release-name") == Some(release)
            && annotation("meta.helm.sh~1release-namespace") == Some(release_ns)
            && live.pointer("/metadata/labels/app.kubernetes.io~1managed-by").and_then(Value::as_str) == Some("Helm");
        let Some(c) = changes
            .iter_mut()
            .find(|c| c.class == UpgradeClass::Create && c.object.kind == k.0 && c.object.name == k.2)
        else {
            continue;
        };
        if owned {
            c.why = "exists already with the release's ownership metadata: Helm takes it over".into();
        } else {
            c.class = UpgradeClass::Blocking;
            c.why = "exists already and is not the release's".into();
            c.error = Some(format!(
                "Unable to continue with update: {} \"{}\" in namespace \"{}\" exists and cannot be imported into the \
                 current release: invalid ownership metadata",
                d.kind, d.name, k.1
            ));
        }
    }
    changes.sort_by(|a, b| {
        (a.class, &a.object.kind, &a.object.name, &a.path).cmp(&(b.class, &b.object.kind, &b.object.name, &b.path))
    });
    Ok(())
}

/// Step 4: what still references each object the upgrade deletes (the kinds the orphans engine
/// knows the references to), leaving out the objects the upgrade deletes too.
async fn references(
    engine: &Engine,
    label: &str,
    namespace: &str,
    changes: &mut [UpgradeChange],
) -> Result<(), UpgradeError> {
    let kinds: BTreeSet<ExaminedKind> = changes
        .iter()
        .filter(|c| c.class == UpgradeClass::Delete)
        .filter_map(|c| ExaminedKind::of_kind(&c.object.kind))
        .collect();
    if kinds.is_empty() {
        return Ok(());
    }
    let examined: Vec<ExaminedKind> = kinds.into_iter().collect();
    let inv =
        collect(&engine.kinds, &engine.reader, &examined, Some(namespace), 0, &NoProgress).await.map_err(|e| {
            UpgradeError::Live { release: label.into(), what: "reading references", message: e.to_string() }
        })?;
    let graph = ReferenceGraph::build(&inv);
    let deleted: Vec<String> = changes
        .iter()
        .filter(|c| c.class == UpgradeClass::Delete)
        .map(|c| format!("{}/{}", c.object.kind, c.object.name))
        .collect();
    for c in changes.iter_mut().filter(|c| c.class == UpgradeClass::Delete) {
        let Some(kind) = ExaminedKind::of_kind(&c.object.kind) else { continue };
        let ns = c.object.namespace.clone().unwrap_or_default();
        c.referenced_by = graph
            .uses(kind, &ns, &c.object.name)
            .into_iter()
            .filter(|who| !deleted.iter().any(|d| who.starts_with(d.as_str()) || who.contains(&format!(" {d}"))))
            .collect();
    }
    Ok(())
}

/// The new chart's default values (`helm show values`), for tracing; `None` when helm cannot
/// show them.
fn show_values(settings: &RenderSettings, opts: &UpgradeOptions, args: &[OsString]) -> Option<Value> {
    let mut cmd = std::process::Command::new(&settings.helm);
    cmd.arg("show").arg("values").arg(&opts.chart).args(args).env_remove("HELM_KUBECONTEXT");
    let done = crate::source::child::run(&mut cmd, Some(std::time::Instant::now() + settings.timeout)).ok()?;
    if !done.status.success() {
        return None;
    }
    let text = String::from_utf8(done.stdout).ok()?;
    match crate::source::yaml11::from_str(&text).ok()? {
        Value::Null => Some(Value::Object(Default::default())),
        v => Some(v),
    }
}

fn read_values(path: &PathBuf) -> Option<Value> {
    crate::source::yaml11::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Name, on each chart change and overwritten hand edit, the values that render its field in the
/// new chart and whose value changed (a render of the new chart with sentinel values).
fn trace(
    settings: &RenderSettings,
    scratch: &Scratch,
    opts: &UpgradeOptions,
    old_merged: &Value,
    new_merged: &Value,
    rendered: &[DesiredObject],
    changes: &mut [UpgradeChange],
) {
    let sentinels = sentinel_values(new_merged, false);
    let Ok(file) = scratch.values("sentinels.yaml", &values_yaml(&sentinels.tree)) else { return };
    let mut args: Vec<OsString> = Vec::new();
    if let Some(v) = &opts.version {
        args.extend(["--version".into(), v.into()]);
    }
    args.extend(["--values".into(), file.into()]);
    let Ok(text) = render_chart(settings, opts.chart.as_ref(), &args) else { return };
    let (marked, _) = parse_stream(&text, "sentinel render");
    let ns = opts.namespace.as_str();
    for c in changes.iter_mut().filter(|c| matches!(c.class, UpgradeClass::ChartChange | UpgradeClass::Blocking)) {
        let Some(path) = &c.path else { continue };
        let key = (c.object.kind.clone(), c.object.namespace.clone().unwrap_or_default(), c.object.name.clone());
        let Some(new) = rendered.iter().find(|d| key_of(d, ns) == key) else { continue };
        let Some(found) = marked.iter().find(|d| d.kind == new.kind && d.source == new.source) else { continue };
        let Some(at) = locate(path, &new.body, &found.body) else { continue };
        c.values =
            sentinels.keys_in(at).into_iter().filter(|k: &FieldPath| k.get(old_merged) != k.get(new_merged)).collect();
    }
}
