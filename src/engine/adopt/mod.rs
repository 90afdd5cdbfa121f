//! `adopt RELEASE`: fold a release's live drift back into its values (docs/adopt.md).
//!
//! 1. [`release_drift`]: the release's drift, as `release` finds it (the one release check,
//!    `drift::release`: the stored manifest against live, Helm's lifecycle, Flux), with the live
//!    values kept.
//! 2. [`render_again`]: the chart stored with the release is rendered again with `helm
//!    template`: with sentinel values (every string a marker, every number a unique number; see
//!    [`values`]), where a marker lands says which value renders a field; with probe values (one
//!    more item in every list, one more key in every map of scalars), where an addition by hand
//!    could come from.
//! 3. [`trace`]: each drifted field becomes an overlay operation, or "not adoptable" with why.
//! 4. [`prove`], as reconcile commands are proven: the chart is rendered with the release's user
//!    values and the overlay (what `helm upgrade --reuse-values -f overlay.yaml` renders), and
//!    the drift engine compares that render with live: an adopted field must no longer differ,
//!    and no field that the user values' own render matched may differ now. What is not proven
//!    is not adoptable, never in the overlay ([`adopt_report`] writes the overlay); where its
//!    value's render differs from live elsewhere, those fields are named ([`judge_render`]).
//!
//! Rendering is local (`helm template`, no `--validate`): nothing is sent to the cluster.

pub mod files;
pub mod values;
pub mod yaml_edit;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::engine::compare::rules::IgnoreRule;
use crate::engine::compare::{CompareContext, prepare_desired};
use crate::engine::drift::release::{DecodedRelease, DesiredRelease, ReleaseCheck, check_release};
use crate::engine::drift::{Engine, helm_deployers, helm_metadata};
use crate::engine::reconcile::Reconciler;
use crate::report::adopt::{AdoptReport, Adoption, AlsoRenders, NotAdoptable, ObjectRef, SetAtAdmission, values_yaml};
use crate::report::field::Change;
use crate::report::path::{FieldPath, Seg, scalar_text};
use crate::report::secret::{is_secret_field, redact_value, secret_bytes};
use crate::report::{ObjectReport, ObjectState};
use crate::source::cluster::Cluster;
use crate::source::helm::chart::{ChartError, StoredChart};
use crate::source::helm::render::{RenderError, RenderSettings, render};
use crate::source::helm::storage::ReleaseRevisions;
use crate::source::helm::{Release, StorageError};
use crate::source::live::LiveError;
use crate::source::manifest::{DesiredObject, parse_stream};

use values::{Op, Sentinels};

/// What to adopt, and how.
#[derive(Debug, Clone)]
pub struct AdoptOptions {
    pub release: String,
    pub namespace: String,
    /// The helm binary that renders the chart.
    pub helm: PathBuf,
    /// Write Secret values into the overlay (else their keys are named, their values left out).
    pub show_secrets: bool,
    /// Fields these rules ignore are not drift, and not adopted.
    pub rules: Vec<IgnoreRule>,
    /// Each render gives up after this long.
    pub render_timeout: Duration,
    /// What a value changed at admission is to the release check (`admission_changes:` in
    /// `--config`); either way it is never adopted, only named.
    pub admission_changes: crate::engine::compare::AdmissionChanges,
}

/// Why adopt could not run.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    /// Release storage could not be read.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Discovery or a LIST failed.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// No such release.
    #[error("release {namespace}/{name} not found")]
    NotFound { namespace: String, name: String },
    /// The stored chart could not be written out.
    #[error(transparent)]
    Chart(#[from] ChartError),
    /// `helm template` failed for the release's own values.
    #[error("release {release}: {source}")]
    Render {
        release: String,
        #[source]
        source: RenderError,
    },
    /// The drift check could not see everything: nothing is adopted from half a picture.
    #[error("release {release}: the drift check could not see everything: {message}")]
    Incomplete { release: String, message: String },
    /// A scratch file could not be written.
    #[error("writing {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// One drifted field on its way into the overlay.
#[derive(Debug, Clone)]
struct Candidate {
    object: ObjectRef,
    path: FieldPath,
    ops: Vec<Op>,
    secret: bool,
}

/// One drifted field: the object it is on, the field, its values.
struct Finding<'a> {
    object: &'a ObjectReport,
    path: &'a FieldPath,
    change: Change,
    live: Option<&'a Value>,
}

/// The scratch folder of one run (removed on drop).
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Scratch {
    pub(crate) fn new() -> Result<Scratch, AdoptError> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kubectl-drift-adopt-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let scratch = Scratch(dir);
        for sub in ["chart", "chart-schema"] {
            std::fs::create_dir_all(scratch.0.join(sub))
                .map_err(|source| AdoptError::Io { path: scratch.0.join(sub).display().to_string(), source })?;
        }
        Ok(scratch)
    }

    /// Write a values file (private to this user: it may hold Secret values).
    pub(crate) fn values(&self, name: &str, text: &str) -> Result<PathBuf, AdoptError> {
        use std::io::Write;
        let path = self.0.join(name);
        let io = |source| AdoptError::Io { path: path.display().to_string(), source };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut f = options.open(&path).map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        Ok(path)
    }
}

/// Adopt one release's drift: the report (overlay, adopted fields, fields left). The steps are
/// the module documentation's.
pub async fn adopt_release(cluster: &Cluster, opts: &AdoptOptions) -> Result<AdoptReport, AdoptError> {
    let drift = release_drift(cluster, opts).await?;
    let scratch = Scratch::new()?;
    drift.chart.write_to(&scratch.0.join("chart"), &drift.label, false)?;
    drift.chart.write_to(&scratch.0.join("chart-schema"), &drift.label, true)?;
    let release = &drift.decoded.release;
    let settings = drift.render_settings(cluster, opts.helm.clone(), opts.render_timeout).await;
    let renderer = Renderer { settings: &settings, scratch: &scratch, release };
    let renders = render_again(&renderer, &drift)?;
    let (candidates, mut left) = trace(opts, &drift, &renders);
    let (proven, unproven, also) = prove(opts, &drift, &renderer, &renders, candidates).await;
    left.extend(unproven.iter().map(|c| not_proven(opts, &drift, c, &also)));
    Ok(adopt_report(opts, &drift, &renders.merged, &proven, left))
}

/// Step 1: a release's drift, as `release` finds it, with what the next steps read.
pub(crate) struct ReleaseDrift {
    /// `NS/NAME`, as errors name the release.
    pub(crate) label: String,
    pub(crate) decoded: DecodedRelease,
    pub(crate) chart: StoredChart,
    /// Its drift engine: live values unredacted, as they are adopted (what is printed is
    /// redacted when the report is made).
    pub(crate) engine: Engine,
    /// The stored manifest's objects, as compared.
    pub(crate) stored: Vec<DesiredObject>,
    pub(crate) check: ReleaseCheck,
}

impl ReleaseDrift {
    /// How `helm template` renders for this release: its name and namespace, the cluster's
    /// version and served APIs as capabilities.
    pub(crate) async fn render_settings(&self, cluster: &Cluster, helm: PathBuf, timeout: Duration) -> RenderSettings {
        RenderSettings {
            helm,
            release: self.decoded.release.name.clone(),
            namespace: self.decoded.release.namespace.clone(),
            kube_version: cluster.client().apiserver_version().await.ok().map(|v| v.git_version),
            api_versions: api_versions(&self.engine),
            timeout,
        }
    }
}

/// Step 1: read the release and its chart from storage and check it, the one release check
/// (the chart's `crds/` left out: no value renders them). Nothing is adopted from half a
/// picture: a check that could not see everything is an error.
pub(crate) async fn release_drift(cluster: &Cluster, opts: &AdoptOptions) -> Result<ReleaseDrift, AdoptError> {
    let (name, ns) = (opts.release.clone(), opts.namespace.clone());
    let label = format!("{ns}/{name}");
    let found = cluster.store().releases_to_check(Some(&ns), std::slice::from_ref(&name), None).await?;
    let ReleaseRevisions { summary, desired, newer } = match found.into_iter().next() {
        Some(Ok(r)) => r,
        Some(Err((_, e))) => return Err(e.into()),
        None => return Err(AdoptError::NotFound { namespace: ns, name }),
    };
    let (release, chart) = desired.release.decode_with_chart()?;
    let chart = chart.ok_or_else(|| ChartError::NoChart { release: label.clone() })?;
    let decoded = DecodedRelease::new(summary, release, newer);
    let mut engine = Engine::connect(cluster, opts.rules.clone(), true).await?;
    engine.chart_crds = false;
    engine.admission_changes = opts.admission_changes;
    let desired = DesiredRelease::build(&decoded);
    if let Some(e) = desired.errors.first() {
        return Err(AdoptError::Incomplete { release: label, message: e.clone() });
    }
    let check = check_release(&engine, &desired, &Reconciler::from(cluster.target())).await;
    let stored = desired.objects;
    let report = &check.report;
    if report.problem.is_some() || report.objects.iter().any(|o| o.state == ObjectState::Error) {
        let messages: Vec<String> = (report.problem.iter().map(ToString::to_string))
            .chain(report.objects.iter().filter_map(|o| o.error.clone()))
            .collect();
        return Err(AdoptError::Incomplete { release: label, message: messages.join("; ") });
    }
    Ok(ReleaseDrift { label, decoded, chart, engine, stored, check })
}

/// Step 2's renders of the stored chart, and the values they come from.
struct Renders {
    /// The release's user values, as a values file.
    config_file: PathBuf,
    /// The chart's default values with the user values over them.
    merged: Value,
    /// The user values' own render: the baseline the proof is judged against (a chart that
    /// renders something else each time, a random password, differs in both).
    baseline: Vec<DesiredObject>,
    marked: Sentinels,
    marked_all: Sentinels,
    probed: Sentinels,
    rendered_marked: Result<Vec<DesiredObject>, RenderError>,
    rendered_all: Result<Vec<DesiredObject>, RenderError>,
    rendered_probed: Result<Vec<DesiredObject>, RenderError>,
}

/// Step 2: render the stored chart again, with the user values (the baseline), with sentinel
/// values (markers) and with probe values. Only the baseline must render.
fn render_again(renderer: &Renderer<'_>, drift: &ReleaseDrift) -> Result<Renders, AdoptError> {
    let config = drift.decoded.release.values();
    let merged = values::merged(&drift.chart.default_values(), &config);
    let config_file = renderer.scratch.values("config.yaml", &values_yaml(&config))?;
    let baseline = renderer
        .objects("baseline", std::slice::from_ref(&config_file), true)
        .map_err(|source| AdoptError::Render { release: drift.label.clone(), source })?;
    let marked = values::sentinel_values(&merged, false);
    let marked_all = values::sentinel_values(&merged, true);
    let probed = values::probe_values(&merged);
    let rendered_marked = renderer.with_values("sentinels", &marked.tree);
    let rendered_all = renderer.with_values("sentinels-all", &marked_all.tree);
    let rendered_probed = renderer.with_values("probes", &probed.tree);
    Ok(Renders {
        config_file,
        merged,
        baseline,
        marked,
        marked_all,
        probed,
        rendered_marked,
        rendered_all,
        rendered_probed,
    })
}

/// Step 3: each drifted field traced to the values that render it: an overlay operation (a
/// candidate, proven next), or not adoptable with why.
fn trace(opts: &AdoptOptions, drift: &ReleaseDrift, r: &Renders) -> (Vec<Candidate>, Vec<NotAdoptable>) {
    let stored_index = Index::new(&drift.stored);
    let (mut candidates, mut left) = (Vec::new(), Vec::new());
    for f in findings(&drift.check.report.objects) {
        let object = object_ref(f.object);
        let secret = is_secret_field(&f.object.kind, f.path);
        let patch_for = |live: Option<&Value>| {
            if secret && !opts.show_secrets {
                return None;
            }
            let live_obj = drift.check.live.get(&(
                f.object.kind.clone(),
                f.object.namespace.clone().unwrap_or_default(),
                f.object.name.clone(),
            ))?;
            kustomize_patch(&object, f.path, f.change, live?, live_obj)
        };
        let not = |reason: String| NotAdoptable {
            object: object.clone(),
            path: f.path.clone(),
            change: f.change,
            reason,
            patch: patch_for(f.live),
            also_renders: Vec::new(),
        };
        let Some(desired) = stored_index.find(f.object) else {
            left.push(not("not a document of the stored manifest".into()));
            continue;
        };
        let solved = match f.change {
            Change::Removed => Err("removed by hand: adopt sets values, it does not take a field away".into()),
            Change::Changed => {
                let desired_body = prepared(desired);
                let (Some(live), Some(want)) = (f.live, f.path.get(&desired_body)) else {
                    left.push(not("the field is not in both the release and live".into()));
                    continue;
                };
                let first = solve_in(&r.rendered_marked, &r.marked, desired, &f, want, live, &r.merged);
                match first {
                    Ok(op) => Ok(vec![op]),
                    Err(e) => match solve_in(&r.rendered_all, &r.marked_all, desired, &f, want, live, &r.merged) {
                        Ok(op) => Ok(vec![op]),
                        Err(_) => Err(e),
                    },
                }
            }
            Change::Added => match (&r.rendered_probed, f.live) {
                (Ok(objects), Some(live)) => match Index::new(objects).find_like(desired, &stored_index) {
                    Some(render) => {
                        let (stored_body, render_body) = (prepared(desired), prepared(render));
                        let at = locate(f.path, &stored_body, &render_body);
                        let parent = FieldPath(f.path.0[..f.path.0.len().saturating_sub(1)].to_vec());
                        let in_parent = locate(&parent, &stored_body, &render_body);
                        values::solve_addition(at, in_parent, f.path.0.last(), live, &r.probed, &r.merged)
                    }
                    None => Err("the chart did not render this object with probe values".into()),
                },
                (Err(e), _) => Err(format!("the chart could not be rendered with probe values: {}", scrub(e))),
                (_, None) => Err("no live value".into()),
            },
        };
        match solved {
            Ok(ops) => candidates.push(Candidate { object, path: f.path.clone(), ops, secret }),
            Err(reason) => left.push(not(reason)),
        }
    }
    (candidates, left)
}

/// Step 4: the candidates proven, those that are not, and what each value that failed its own
/// proof also renders (not edited live). All at once; when that fails, value by value, then the
/// proven ones together.
async fn prove(
    opts: &AdoptOptions,
    drift: &ReleaseDrift,
    renderer: &Renderer<'_>,
    r: &Renders,
    candidates: Vec<Candidate>,
) -> (Vec<Candidate>, Vec<Candidate>, Vec<AlsoRenders>) {
    let ctx = CompareContext { deployers: helm_deployers(), ..Default::default() };
    let judge = Judge { engine: &drift.engine, ctx: &ctx, namespace: &opts.namespace };
    let before = judge.findings(&r.baseline).await;
    let (mut proven, mut also): (Vec<Candidate>, Vec<AlsoRenders>) = (Vec::new(), Vec::new());
    if candidates.is_empty() {
        return (proven, candidates, also);
    }
    let all = judge.proves(renderer, &r.config_file, &r.merged, &candidates, &before, "all").await;
    if all.failed.is_empty() {
        return (candidates, Vec::new(), also);
    }
    let mut groups: BTreeMap<String, Vec<Candidate>> = BTreeMap::new();
    for c in &candidates {
        let key = c.ops.first().map(|o| o.key().to_string()).unwrap_or_default();
        groups.entry(key).or_default().push(c.clone());
    }
    for (i, group) in groups.values().enumerate() {
        let proof = judge.proves(renderer, &r.config_file, &r.merged, group, &before, &format!("g{i}")).await;
        if proof.failed.is_empty() {
            proven.extend(group.iter().cloned());
        } else {
            also.extend(proof.also);
        }
    }
    if !proven.is_empty()
        && !judge.proves(renderer, &r.config_file, &r.merged, &proven, &before, "proven").await.failed.is_empty()
    {
        proven.clear();
    }
    let unproven = candidates.into_iter().filter(|c| !proven.iter().any(|p| p.object == c.object && p.path == c.path));
    let unproven = unproven.collect();
    (proven, unproven, also)
}

/// A candidate the proof did not confirm: not adoptable, with its patch for a post-renderer.
fn not_proven(opts: &AdoptOptions, drift: &ReleaseDrift, c: &Candidate, also: &[AlsoRenders]) -> NotAdoptable {
    let change = if c.ops.iter().any(|o| !matches!(o, Op::Set { .. })) { Change::Added } else { Change::Changed };
    let live = drift
        .check
        .report
        .objects
        .iter()
        .find(|o| object_ref(o) == c.object)
        .and_then(|o| o.fields.iter().find(|f| f.path == c.path))
        .and_then(|f| f.live.clone());
    let patch = (!c.secret || opts.show_secrets)
        .then(|| {
            let key = (c.object.kind.clone(), c.object.namespace.clone().unwrap_or_default(), c.object.name.clone());
            kustomize_patch(&c.object, &c.path, change, live.as_ref()?, drift.check.live.get(&key)?)
        })
        .flatten();
    let keys: BTreeSet<&FieldPath> = c.ops.iter().map(Op::key).collect();
    let also_renders: Vec<AlsoRenders> = also.iter().filter(|a| keys.contains(&a.value)).cloned().collect();
    NotAdoptable {
        object: c.object.clone(),
        path: c.path.clone(),
        change,
        reason: not_proven_reason(&keys, &also_renders),
        patch,
        also_renders,
    }
}

/// "not proven", and why where it is known: what else the values render.
fn not_proven_reason(keys: &BTreeSet<&FieldPath>, also: &[AlsoRenders]) -> String {
    let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
    let mut reason = format!(
        "value {} was traced here, but a render with the overlay did not reproduce live (not proven)",
        keys.join(", ")
    );
    if !also.is_empty() {
        let why: Vec<String> = also.iter().map(ToString::to_string).collect();
        reason.push_str(&format!(": {}", why.join("; ")));
    }
    reason
}

/// The overlay the user gets (Secret values only when asked for) and the report.
fn adopt_report(
    opts: &AdoptOptions,
    drift: &ReleaseDrift,
    merged: &Value,
    proven: &[Candidate],
    left: Vec<NotAdoptable>,
) -> AdoptReport {
    let mut overlay = Value::Object(Default::default());
    let mut left_out = BTreeSet::new();
    let mut adopted = Vec::new();
    for c in proven {
        for op in &c.ops {
            let hide = c.secret && !opts.show_secrets;
            if hide {
                left_out.insert(op.key().clone());
            } else {
                values::apply(&mut overlay, merged, op);
            }
            let shown = |v: Value| if hide { redact_value(&v, false) } else { v };
            adopted.push(Adoption {
                object: c.object.clone(),
                path: c.path.clone(),
                value_key: op.key().clone(),
                old: op.key().get(merged).cloned().map(shown),
                new: shown(op.new_value()),
                proven: true,
                secret: c.secret,
            });
        }
    }
    let release = &drift.decoded.release;
    AdoptReport {
        release: release.name.clone(),
        namespace: opts.namespace.clone(),
        revision: release.revision,
        chart: release.chart_name().to_string(),
        chart_version: release.chart_version().to_string(),
        adopted,
        not_adoptable: left,
        left_out: left_out.into_iter().collect(),
        overlay,
        server_side: release.apply_method.as_deref() == Some("ssa"),
        set_at_admission: set_at_admission(&drift.check.report.objects),
    }
}

/// The fields the release check found changed at admission, whether ignored (the default) or
/// counted as drift: named, never adopted.
fn set_at_admission(objects: &[ObjectReport]) -> Vec<SetAtAdmission> {
    objects
        .iter()
        .flat_map(|o| {
            o.fields.iter().filter_map(move |f| {
                let cause = f.admission.clone()?;
                Some(SetAtAdmission { object: object_ref(o), path: f.path.clone(), cause })
            })
        })
        .collect()
}

/// Every group/version and group/version/Kind the cluster serves, for `--api-versions`.
fn api_versions(engine: &Engine) -> Vec<String> {
    let mut out = BTreeSet::new();
    for k in engine.kinds.every_listable_version() {
        out.insert(k.resource.api_version.clone());
        out.insert(format!("{}/{}", k.resource.api_version, k.resource.kind));
    }
    out.into_iter().collect()
}

/// A render error's text, for a reason: a render with sentinel or probe values never holds a
/// Secret value, but keep any one line short.
fn scrub(e: &RenderError) -> String {
    let text = e.to_string();
    if text.len() > 300 { format!("{}...", text.chars().take(300).collect::<String>()) } else { text }
}

/// The drifted fields (not ignored, not from a newer revision), and the objects drifted whole.
fn findings(objects: &[ObjectReport]) -> Vec<Finding<'_>> {
    static ROOT: std::sync::LazyLock<FieldPath> = std::sync::LazyLock::new(FieldPath::root);
    let mut out = Vec::new();
    for o in objects {
        match o.state {
            ObjectState::Changed => {
                // A value changed at admission is the platform's, also when it counts as drift
                // (`--admission-changes=drift`): never a candidate ([`set_at_admission`]).
                for f in
                    o.fields.iter().filter(|f| f.reason.is_none() && f.from_revision.is_none() && f.admission.is_none())
                {
                    out.push(Finding { object: o, path: &f.path, change: f.change, live: f.live.as_ref() });
                }
            }
            ObjectState::Missing => out.push(Finding { object: o, path: &ROOT, change: Change::Removed, live: None }),
            ObjectState::Extra => out.push(Finding { object: o, path: &ROOT, change: Change::Added, live: None }),
            _ => {}
        }
    }
    out
}

fn object_ref(o: &ObjectReport) -> ObjectRef {
    ObjectRef {
        api_version: o.api_version.clone(),
        kind: o.kind.clone(),
        namespace: o.namespace.clone(),
        name: o.name.clone(),
    }
}

/// A desired object as the drift engine compares it (Secret `stringData` as base64 `data`).
fn prepared(d: &DesiredObject) -> Value {
    prepare_desired(&d.kind, &d.body)
}

/// The objects of a render, found by where they came from (template, kind and their order in
/// it), as names may hold markers.
struct Index<'a> {
    by_place: HashMap<(String, String, usize), &'a DesiredObject>,
    place_of: HashMap<(String, String), (String, String, usize)>,
}

impl<'a> Index<'a> {
    fn new(objects: &'a [DesiredObject]) -> Index<'a> {
        let mut counts: HashMap<(String, String), usize> = HashMap::new();
        let (mut by_place, mut place_of) = (HashMap::new(), HashMap::new());
        for o in objects {
            let n = counts.entry((o.source.clone(), o.kind.clone())).or_default();
            let place = (o.source.clone(), o.kind.clone(), *n);
            *n += 1;
            by_place.insert(place.clone(), o);
            place_of.insert((o.kind.clone(), o.name.clone()), place);
        }
        Index { by_place, place_of }
    }

    /// The stored object a drift report names.
    fn find(&self, o: &ObjectReport) -> Option<&'a DesiredObject> {
        let place = self.place_of.get(&(o.kind.clone(), o.name.clone()))?;
        self.by_place.get(place).copied()
    }

    /// The object of this render at the place `stored` has in `stored_index`.
    fn find_like(&self, stored: &DesiredObject, stored_index: &Index) -> Option<&'a DesiredObject> {
        let place = stored_index.place_of.get(&(stored.kind.clone(), stored.name.clone()))?;
        self.by_place.get(place).copied()
    }
}

/// The value at `path` in `other`, stepping through lists at the positions the items have in
/// `stored` (a list item named by a marker is still found).
pub(crate) fn locate<'v>(path: &FieldPath, stored: &Value, other: &'v Value) -> Option<&'v Value> {
    let mut d = Some(stored);
    let mut o = other;
    for seg in path.segs() {
        let (next_d, next_o) = match seg {
            Seg::Key(k) => (d.and_then(|d| d.get(k)), o.get(k)?),
            Seg::Index(i) => (d.and_then(|d| d.get(*i)), o.get(*i)?),
            Seg::Item { field, value } => {
                let matches = |item: &Value| item.get(field).is_some_and(|x| scalar_text(x) == *value);
                match d.and_then(Value::as_array).and_then(|a| a.iter().position(matches)) {
                    Some(i) => (d.and_then(|d| d.get(i)), o.get(i)?),
                    None => {
                        let a = o.as_array()?;
                        (None, a.iter().find(|x| matches(x))?)
                    }
                }
            }
        };
        d = next_d;
        o = next_o;
    }
    Some(o)
}

/// Solve a changed field in one sentinel render (Secret data compared as its decoded text).
fn solve_in(
    render: &Result<Vec<DesiredObject>, RenderError>,
    s: &Sentinels,
    stored: &DesiredObject,
    f: &Finding,
    want: &Value,
    live: &Value,
    merged: &Value,
) -> Result<Op, String> {
    let objects =
        render.as_ref().map_err(|e| format!("the chart could not be rendered with sentinel values: {}", scrub(e)))?;
    let index = Index::new(objects);
    let stored_index = Index::new(std::slice::from_ref(stored));
    let Some(rendered_obj) = index.find_like(stored, &stored_index).filter(|r| r.kind == stored.kind) else {
        return Err("the chart did not render this object with sentinel values".into());
    };
    let body = prepared(rendered_obj);
    let Some(rendered) = locate(f.path, &prepared(stored), &body) else {
        return Err("the chart did not render this field with sentinel values (it depends on a value)".into());
    };
    let data = f.object.kind == "Secret" && f.path.starts_with(&["data"]);
    let text = |v: &Value| -> Value {
        secret_bytes(v).and_then(|b| String::from_utf8(b).ok()).map(Value::String).unwrap_or_else(|| v.clone())
    };
    if data {
        values::solve(&text(rendered), &text(want), &text(live), s, merged)
    } else {
        values::solve(rendered, want, live, s, merged)
    }
}

/// Renders of the stored chart.
struct Renderer<'a> {
    settings: &'a RenderSettings,
    scratch: &'a Scratch,
    release: &'a Release,
}

impl Renderer<'_> {
    /// Render with these values files (the chart with its schema, or without).
    fn objects(&self, what: &str, files: &[PathBuf], schema: bool) -> Result<Vec<DesiredObject>, RenderError> {
        let dir = self.scratch.0.join(if schema { "chart-schema" } else { "chart" });
        let text = tokio::task::block_in_place(|| render(self.settings, &dir, files))?;
        let (mut objects, _) = parse_stream(&text, &format!("render {what}"));
        helm_metadata(&mut objects, &self.release.name, &self.release.namespace);
        Ok(objects)
    }

    /// Render with one values tree (sentinels or probes), on the chart without its schema.
    fn with_values(&self, what: &str, tree: &Value) -> Result<Vec<DesiredObject>, RenderError> {
        let file = self
            .scratch
            .values(&format!("{what}.yaml"), &values_yaml(tree))
            .map_err(|e| RenderError::Failed { message: e.to_string() })?;
        self.objects(what, &[file], false)
    }
}

/// Field findings of a render against live, as (kind, namespace, name, path) keys.
struct Judge<'a> {
    engine: &'a Engine,
    ctx: &'a CompareContext,
    namespace: &'a str,
}

/// (kind, namespace, name, path); the root path for an object missing or not read.
type Key = (String, String, String, FieldPath);

/// What one proof found: the candidates that failed it, and the fields that differ from live
/// now but did not with the user values alone and are no candidate's.
struct Proof {
    failed: Vec<usize>,
    also: Vec<AlsoRenders>,
}

/// A render's drift findings (not ignored) as keys.
fn finding_keys(objects: &[ObjectReport]) -> BTreeSet<Key> {
    let mut out = BTreeSet::new();
    for o in objects {
        let ns = o.namespace.clone().unwrap_or_default();
        if o.state == ObjectState::Missing || o.state == ObjectState::Error {
            out.insert((o.kind.clone(), ns.clone(), o.name.clone(), FieldPath::root()));
        }
        for f in o.fields.iter().filter(|f| f.reason.is_none() && f.admission.is_none()) {
            out.insert((o.kind.clone(), ns.clone(), o.name.clone(), f.path.clone()));
        }
    }
    out
}

/// Judge a render with the candidates' overlay against live (`after`, its findings), knowing the
/// user values' own findings (`before`): the candidates whose field still differs, or all of them
/// when a field the baseline matched differs now; those fields, each named with the candidates'
/// value keys (a proof is run for one value key, or for a set already proven one by one).
fn judge_render(before: &BTreeSet<Key>, after: &BTreeSet<Key>, candidates: &[Candidate]) -> Proof {
    let others: Vec<&Key> =
        after.iter().filter(|k| !before.contains(*k) && !candidates.iter().any(|c| key_of(c) == **k)).collect();
    if !others.is_empty() {
        let values: BTreeSet<&FieldPath> = candidates.iter().flat_map(|c| c.ops.iter().map(Op::key)).collect();
        let also = values
            .iter()
            .flat_map(|v| {
                others.iter().map(|k| AlsoRenders {
                    value: (*v).clone(),
                    kind: k.0.clone(),
                    namespace: Some(k.1.clone()).filter(|n| !n.is_empty()),
                    name: k.2.clone(),
                    path: k.3.clone(),
                })
            })
            .collect();
        return Proof { failed: (0..candidates.len()).collect(), also };
    }
    let missing: BTreeSet<(&str, &str, &str)> =
        after.iter().filter(|k| k.3.segs().is_empty()).map(|k| (k.0.as_str(), k.1.as_str(), k.2.as_str())).collect();
    let failed = (0..candidates.len())
        .filter(|&i| {
            let k = key_of(&candidates[i]);
            after.contains(&k) || missing.contains(&(k.0.as_str(), k.1.as_str(), k.2.as_str()))
        })
        .collect();
    Proof { failed, also: Vec::new() }
}

impl Judge<'_> {
    async fn findings(&self, objects: &[DesiredObject]) -> BTreeSet<Key> {
        finding_keys(&self.engine.check_objects(objects, self.namespace, self.ctx, None).await.objects)
    }

    /// Render the user values with these candidates' overlay and compare ([`judge_render`]); all
    /// of them fail when the render fails. No failure: proven.
    async fn proves(
        &self,
        renderer: &Renderer<'_>,
        config: &Path,
        merged: &Value,
        candidates: &[Candidate],
        before: &BTreeSet<Key>,
        what: &str,
    ) -> Proof {
        let mut overlay = Value::Object(Default::default());
        for c in candidates {
            for op in &c.ops {
                values::apply(&mut overlay, merged, op);
            }
        }
        let all = Proof { failed: (0..candidates.len()).collect(), also: Vec::new() };
        let Ok(file) = renderer.scratch.values(&format!("overlay-{what}.yaml"), &values_yaml(&overlay)) else {
            return all;
        };
        let Ok(objects) = renderer.objects(what, &[config.to_path_buf(), file], true) else { return all };
        judge_render(before, &self.findings(&objects).await, candidates)
    }
}

fn key_of(c: &Candidate) -> Key {
    (c.object.kind.clone(), c.object.namespace.clone().unwrap_or_default(), c.object.name.clone(), c.path.clone())
}

/// A kustomize `patches:` entry setting the field to its live value (JSON 6902), for a
/// post-renderer: `helm upgrade --post-renderer` with a kustomization holding it.
fn kustomize_patch(
    object: &ObjectRef,
    path: &FieldPath,
    change: Change,
    live: &Value,
    live_obj: &Value,
) -> Option<String> {
    if path.segs().is_empty() || change == Change::Removed {
        return None;
    }
    let pointer = path.json_pointer(live_obj)?;
    let op = if change == Change::Added { "add" } else { "replace" };
    let mut target = format!("{{kind: {}, name: {}", object.kind, object.name);
    if let Some(ns) = object.namespace.as_deref().filter(|n| !n.is_empty()) {
        target.push_str(&format!(", namespace: {ns}"));
    }
    target.push('}');
    Some(format!(
        "- target: {target}\n  patch: |-\n    - op: {op}\n      path: {pointer}\n      value: {}",
        serde_json::to_string(live).ok()?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn locate_follows_the_stored_positions() {
        let stored = json!({"spec": {"containers": [{"name": "web", "image": "a:1"}]}});
        let render = json!({"spec": {"containers": [{"name": "kdadopt3q", "image": "kdadopt1q:kdadopt2q"}]}});
        let path: FieldPath = "spec.containers[name=web].image".parse().unwrap();
        assert_eq!(locate(&path, &stored, &render), Some(&json!("kdadopt1q:kdadopt2q")));
        let added: FieldPath = "spec.containers[name=web].env[name=X]".parse().unwrap();
        assert_eq!(locate(&added, &stored, &render), None);
    }

    /// Findings of renders against live, as the proof keys them (the pure comparison).
    fn keys(render: &[Value], live: &[Value]) -> BTreeSet<Key> {
        let mut out = BTreeSet::new();
        for (d, l) in render.iter().zip(live) {
            for f in crate::engine::compare::compare_object(d, l, &CompareContext::default()) {
                let (kind, name) = (d["kind"].as_str().unwrap(), d["metadata"]["name"].as_str().unwrap());
                out.insert((kind.into(), "shop".into(), name.into(), f.path));
            }
        }
        out
    }

    fn objects(level: &str, cm_level: &str, token: &str) -> Vec<Value> {
        vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop", "namespace": "shop"},
                   "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:1",
                       "env": [{"name": "LOG_LEVEL", "value": level}]}]}}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop-config", "namespace": "shop"},
                   "data": {"level": cm_level}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "shop-token", "namespace": "shop"},
                   "data": {"token": token}}),
        ]
    }

    #[test]
    fn a_value_that_renders_a_field_not_edited_is_named_as_the_reason() {
        let env: FieldPath = "spec.template.spec.containers[name=web].env[name=LOG_LEVEL].value".parse().unwrap();
        let candidate = |key: &str, value: &str| Candidate {
            object: ObjectRef {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("shop".into()),
                name: "shop".into(),
            },
            path: env.clone(),
            ops: vec![Op::Set { key: key.parse().unwrap(), value: json!(value) }],
            secret: false,
        };
        let (pw, pw2) = ("c2VjcmV0LW9uZQ==", "c2VjcmV0LXR3bw==");
        // Only the env var was edited live; the user values' render matched everything else.
        let live = objects("debug", "info", pw);
        let before = keys(&objects("info", "info", pw), &live);
        assert_eq!(before.len(), 1, "{before:?}");

        // An overlay that renders only the edited field: proven.
        let proof =
            judge_render(&before, &keys(&objects("debug", "info", pw), &live), &[candidate("logLevel", "debug")]);
        assert!(proof.failed.is_empty() && proof.also.is_empty());

        // logLevel also renders the ConfigMap's key (and here a Secret's): refused, each named.
        let c = candidate("logLevel", "debug");
        let proof = judge_render(&before, &keys(&objects("debug", "debug", pw2), &live), std::slice::from_ref(&c));
        assert_eq!(proof.failed, vec![0]);
        let also = |kind: &str, name: &str, path: &str| AlsoRenders {
            value: "logLevel".parse().unwrap(),
            kind: kind.into(),
            namespace: Some("shop".into()),
            name: name.into(),
            path: path.parse().unwrap(),
        };
        assert_eq!(
            proof.also,
            vec![also("ConfigMap", "shop-config", "data.level"), also("Secret", "shop-token", "data.token")]
        );
        let keys: BTreeSet<&FieldPath> = c.ops.iter().map(Op::key).collect();
        let reason = not_proven_reason(&keys, &proof.also);
        assert_eq!(
            reason,
            "value logLevel was traced here, but a render with the overlay did not reproduce live (not proven): \
             logLevel also renders ConfigMap shop/shop-config data.level, which was not edited; \
             logLevel also renders Secret shop/shop-token data.token, which was not edited"
        );
        // Paths and names only: no value, of the Secret's or any other.
        let n = NotAdoptable {
            object: c.object.clone(),
            path: c.path.clone(),
            change: Change::Changed,
            reason,
            patch: None,
            also_renders: proof.also,
        };
        let text = serde_json::to_string(&n).unwrap();
        assert!(!text.contains(pw2) && !text.contains(pw) && !text.contains("debug"), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["alsoRenders"][0],
            json!({"value": "logLevel", "kind": "ConfigMap", "namespace": "shop",
                                               "name": "shop-config", "path": "data.level"})
        );
        // Nothing known: the field is left out of the JSON, the reason as it was.
        let plain = serde_json::to_value(NotAdoptable { also_renders: Vec::new(), ..n }).unwrap();
        assert_eq!(plain.get("alsoRenders"), None);
        assert!(not_proven_reason(&keys, &[]).ends_with("(not proven)"));
    }

    #[test]
    fn patches_name_the_object_and_pointer() {
        let o = ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        };
        let live =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "imagePullPolicy": "Always"}]}}}});
        let path: FieldPath = "spec.template.spec.containers[name=web].imagePullPolicy".parse().unwrap();
        let p = kustomize_patch(&o, &path, Change::Changed, &json!("Always"), &live).unwrap();
        assert_eq!(
            p,
            "- target: {kind: Deployment, name: web, namespace: shop}\n  patch: |-\n    - op: replace\n      path: /spec/template/spec/containers/0/imagePullPolicy\n      value: \"Always\""
        );
    }
}
