//! Charts that render "not set" as null, `""`, `[]` or `{}` (the patterns public charts produced
//! in the sweep, `scripts/sweep`): a fresh install with Helm 3 and Helm 4 is clean, and a person's
//! edit of the same field is still reported. The fixture chart is tests/fixtures/charts/blanks, one
//! pattern per install (`--set pattern=...`).

use serde_json::Value;

use crate::common::{Cluster, Helm, fixture, unique_ns};

/// Install the blanks chart with one pattern into a new namespace; returns the namespace.
pub fn install_pattern(c: &Cluster, helm: Helm, pattern: &str, ns_prefix: &str) -> String {
    let ns = unique_ns(ns_prefix);
    c.create_namespace(&ns);
    install_into(c, helm, pattern, &ns);
    ns
}

/// Install the blanks chart with one pattern into an existing namespace, as release `blanks`.
pub fn install_into(c: &Cluster, helm: Helm, pattern: &str, ns: &str) {
    let chart = fixture("charts/blanks");
    c.helm(helm, &["install", "blanks", chart.to_str().unwrap(), "-n", ns, "--set", &format!("pattern={pattern}")])
        .ok();
}

/// `release blanks -n NS -o json`: exit code and the release report.
pub fn release_report(c: &Cluster, ns: &str) -> (i32, Value) {
    let run = c.drift(&["release", "blanks", "-n", ns, "-o", "json"]);
    (run.code(), run.report()["releases"][0].clone())
}

/// The release is clean (exit 0) and no object is reported as drifted.
pub fn assert_clean(c: &Cluster, ns: &str, what: &str) -> Value {
    let (code, rel) = release_report(c, ns);
    assert_eq!(code, 0, "{what}: a fresh install must be clean: {rel:#}");
    assert_eq!(rel["status"], "clean", "{what}: {rel:#}");
    for o in rel["objects"].as_array().unwrap() {
        assert_eq!(o["state"], "ignored", "{what}: unexpected report: {o:#}");
    }
    rel
}

/// The fields of `kind name` in a release report.
pub fn fields<'a>(rel: &'a Value, kind: &str, name: &str) -> Vec<&'a Value> {
    rel["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == kind && o["name"] == name)
        .flat_map(|o| o["fields"].as_array().unwrap().iter())
        .collect()
}

/// After `edit`, the release is drifted with a field of `kind name` under `path_prefix`,
/// attributed to `manager` and not ignored.
fn assert_edit_found(c: &Cluster, ns: &str, edit: &[&str], kind: &str, name: &str, path_prefix: &str, manager: &str) {
    let mut args = vec!["-n", ns];
    args.extend_from_slice(edit);
    c.kubectl(&args).ok();
    let (code, rel) = release_report(c, ns);
    assert_eq!(code, 1, "the edit ({}) must be drift: {rel:#}", edit.join(" "));
    let hit = fields(&rel, kind, name).into_iter().find(|f| {
        f["path"].as_str().is_some_and(|p| p.starts_with(path_prefix))
            && f["manager"] == manager
            && f["reason"].is_null()
    });
    assert!(hit.is_some(), "no drift at {path_prefix}* by {manager} in {kind} {name}: {rel:#}");
}

fn live(c: &Cluster, ns: &str, what: &str, jsonpath: &str) -> String {
    c.kubectl(&["-n", ns, "get", what, "-o", &format!("jsonpath={jsonpath}")]).ok()
}

/// One pattern with both Helm versions: install, check the live object shows what the server did
/// with the blank value (`check`), expect a clean report, then make `edit` and expect it found.
#[allow(clippy::too_many_arguments)]
fn pattern_case(
    pattern: &str,
    check: impl Fn(&Cluster, &str),
    edit: &[&str],
    kind: &str,
    name: &str,
    path_prefix: &str,
    manager: &str,
) {
    let c = crate::needs_cluster!(pattern);
    for helm in [Helm::V3, Helm::V4] {
        let ns = install_pattern(&c, helm, pattern, "blanks");
        check(&c, &ns);
        assert_clean(&c, &ns, &format!("{pattern} with {helm:?}"));
        assert_edit_found(&c, &ns, edit, kind, name, path_prefix, manager);
        c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
    }
}

#[ignore = "needs the local control plane"]
#[test]
fn null_map_is_not_set() {
    pattern_case(
        "null-map",
        |c, ns| {
            // Desired `annotations: null`; live holds Helm's own annotations.
            let a = live(c, ns, "svc/blanks-null-map", "{.metadata.annotations}");
            assert!(a.contains("meta.helm.sh/release-name"), "{a}");
        },
        &["annotate", "svc/blanks-null-map", "team=payments"],
        "Service",
        "blanks-null-map",
        "metadata.annotations",
        "kubectl-annotate",
    );
}

#[ignore = "needs the local control plane"]
#[test]
fn null_list_is_not_set() {
    pattern_case(
        "null-list",
        |c, ns| {
            // Desired `ipFamilies: null`; the API server fills the list in.
            assert_eq!(live(c, ns, "svc/blanks-null-list", "{.spec.ipFamilies}"), r#"["IPv4"]"#);
        },
        &[
            "patch",
            "deploy/blanks-null-list",
            "--type=merge",
            "-p",
            r#"{"spec":{"template":{"spec":{"tolerations":[{"key":"dedicated","operator":"Exists"}]}}}}"#,
        ],
        "Deployment",
        "blanks-null-list",
        "spec.template.spec.tolerations",
        "kubectl-patch",
    );
}

#[ignore = "needs the local control plane"]
#[test]
fn empty_strings_the_server_fills_are_not_set() {
    pattern_case(
        "empty-string",
        |c, ns| {
            assert!(!live(c, ns, "svc/blanks-empty-string", "{.spec.clusterIP}").is_empty());
            let policy =
                live(c, ns, "deploy/blanks-empty-string", "{.spec.template.spec.containers[0].imagePullPolicy}");
            assert_eq!(policy, "IfNotPresent");
        },
        &[
            "patch",
            "deploy/blanks-empty-string",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/spec/template/spec/containers/0/imagePullPolicy","value":"Always"}]"#,
        ],
        "Deployment",
        "blanks-empty-string",
        "spec.template.spec.containers[name=app].imagePullPolicy",
        "kubectl-patch",
    );
}

#[ignore = "needs the local control plane"]
#[test]
fn empty_lists_are_not_set() {
    pattern_case(
        "empty-list",
        |c, ns| {
            assert_eq!(live(c, ns, "svc/blanks-empty-list", "{.spec.ipFamilies}"), r#"["IPv4"]"#);
        },
        &[
            "patch",
            "deploy/blanks-empty-list",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/spec/template/spec/containers/0/args","value":["--debug"]}]"#,
        ],
        "Deployment",
        "blanks-empty-list",
        "spec.template.spec.containers[name=app].args",
        "kubectl-patch",
    );
}

#[ignore = "needs the local control plane"]
#[test]
fn empty_security_context_and_resources_are_not_set() {
    pattern_case(
        "empty-map",
        |c, ns| {
            let sc = live(c, ns, "deploy/blanks-empty-map", "{.spec.template.spec.securityContext}");
            assert_eq!(sc, "{}");
        },
        &["set", "resources", "deploy/blanks-empty-map", "-c", "app", "--limits=cpu=2"],
        "Deployment",
        "blanks-empty-map",
        "spec.template.spec.containers[name=app].resources",
        "kubectl-set",
    );
}

/// A chart that writes its own `app.kubernetes.io/managed-by` and `meta.helm.sh/release-*` values
/// (tests/fixtures/charts/owned): Helm 3 and Helm 4 overwrite them as they install, so a fresh
/// install is clean; a person's edit of that label afterwards is drift, desired `Helm`.
#[ignore = "needs the local control plane"]
#[test]
fn helm_overwrites_the_metadata_a_chart_sets_for_it() {
    let c = crate::needs_cluster!("owned");
    for helm in [Helm::V3, Helm::V4] {
        let ns = unique_ns("owned");
        c.create_namespace(&ns);
        let chart = fixture("charts/owned");
        c.helm(helm, &["install", "owned", chart.to_str().unwrap(), "-n", &ns]).ok();
        // What Helm wrote over the template's values.
        let label = r"{.metadata.labels.app\.kubernetes\.io/managed-by}";
        assert_eq!(live(&c, &ns, "configmap/owned-operator-labelled", label), "Helm", "{helm:?}");
        assert_eq!(live(&c, &ns, "configmap/owned-kubectl-labelled", label), "Helm", "{helm:?}");
        let release_ns = r"{.metadata.annotations.meta\.helm\.sh/release-namespace}";
        assert_eq!(live(&c, &ns, "configmap/owned-kubectl-labelled", release_ns), ns, "{helm:?}");
        let run = c.drift(&["release", "owned", "-n", &ns, "-o", "json"]);
        let rel = run.report()["releases"][0].clone();
        assert_eq!((run.code(), rel["status"].as_str()), (0, Some("clean")), "{helm:?}: {rel:#}");
        assert_eq!(rel["objects"], serde_json::json!([]), "{helm:?}");
        let label = "app.kubernetes.io/managed-by=mb-operator";
        c.kubectl(&["-n", &ns, "label", "--overwrite", "configmap/owned-operator-labelled", label]).ok();
        let run = c.drift(&["release", "owned", "-n", &ns, "-o", "json"]);
        let rel = run.report()["releases"][0].clone();
        assert_eq!(run.code(), 1, "{helm:?}: the edit must be drift: {rel:#}");
        let edited = fields(&rel, "ConfigMap", "owned-operator-labelled");
        assert!(
            edited.iter().any(|f| f["path"] == r#"metadata.labels["app.kubernetes.io/managed-by"]"#
                && f["desired"] == "Helm"
                && f["live"] == "mb-operator"
                && f["manager"] == "kubectl-label"),
            "{helm:?}: {rel:#}"
        );
        c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
    }
}

/// A chart written for a YAML 1.1 reader (tests/fixtures/charts/yaml11): leading-zero octal file
/// modes, `0o`/hex/binary numbers, underscores, `yes`/`on`/`n` booleans, keys such as `010:` and
/// `yes:`, merges. Helm 3, Helm 4 and kubectl send what go-yaml v2 reads (checked here on the live
/// objects), so a fresh install and a `kubectl apply` of the same files are clean; an edit of a
/// file mode is drift with Helm's value.
#[ignore = "needs the local control plane"]
#[test]
fn yaml_1_1_scalars_are_read_as_helm_and_kubectl_read_them() {
    let c = crate::needs_cluster!("yaml11");
    let chart = fixture("charts/yaml11");
    let scalars = "scalars.yaml11.drift.test/yaml11-scalars";
    for helm in [Helm::V3, Helm::V4] {
        let ns = unique_ns("yaml11");
        c.create_namespace(&ns);
        c.helm(helm, &["install", "yaml11", chart.to_str().unwrap(), "-n", &ns]).ok();
        // What Helm sent, as the API server stored it.
        assert_eq!(
            live(&c, &ns, scalars, "{.spec.octal} {.spec.hex} {.spec.underscores} {.spec.boolOn}"),
            "511 31 1000 true"
        );
        assert_eq!(live(&c, &ns, scalars, "{.spec.keys.8} {.spec.keys.true} {.spec.boolKeys.true}"), "octal bool 5");
        assert_eq!(live(&c, &ns, scalars, "{.spec.mergeAfter.a} {.spec.sexagesimal}"), "1 190:20:30");
        let modes = r#"{.spec.template.spec.volumes[*].configMap.defaultMode}"#;
        assert_eq!(live(&c, &ns, "deployment/yaml11-modes", modes), "511 420", "{helm:?}");
        let run = c.drift(&["release", "yaml11", "-n", &ns, "-o", "json"]);
        let rel = run.report()["releases"][0].clone();
        assert_eq!((run.code(), rel["status"].as_str()), (0, Some("clean")), "{helm:?}: {rel:#}");
        assert_eq!(rel["objects"], serde_json::json!([]), "{helm:?}");
        // A real change to a mode is still found, with Helm's value as the desired one.
        let patch = r#"[{"op":"replace","path":"/spec/template/spec/volumes/0/configMap/defaultMode","value":420}]"#;
        c.kubectl(&["-n", &ns, "patch", "deployment/yaml11-modes", "--type=json", "-p", patch]).ok();
        let run = c.drift(&["release", "yaml11", "-n", &ns, "-o", "json"]);
        let rel = run.report()["releases"][0].clone();
        assert_eq!(run.code(), 1, "{helm:?}: the edit must be drift: {rel:#}");
        let edited = fields(&rel, "Deployment", "yaml11-modes");
        assert!(
            edited.iter().any(|f| f["path"].as_str().is_some_and(|p| p.ends_with("configMap.defaultMode"))
                && f["desired"] == 511
                && f["live"] == 420),
            "{helm:?}: {rel:#}"
        );
        c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
    }
    // kubectl reads files the same way: `manifests` on the applied templates is clean.
    let ns = unique_ns("yaml11-files");
    c.create_namespace(&ns);
    let files = chart.join("templates");
    let files = files.to_str().unwrap();
    c.kubectl(&["apply", "-n", &ns, "-f", files]).ok();
    assert_eq!(live(&c, &ns, "deployment/yaml11-modes", "{.spec.replicas} {.spec.progressDeadlineSeconds}"), "1 600");
    let run = c.drift(&["manifests", "-f", files, "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 0, "kubectl-applied files must be clean: {}", run.stdout());
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
