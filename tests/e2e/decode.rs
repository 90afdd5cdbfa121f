//! Release decoding proven on real releases made by real Helm 3 and Helm 4.

use kubectl_drift::source::helm::Driver;
use serde_json::Value;

use crate::common::{Cluster, Helm, fixture, runtime, unique_ns};

/// Install the shop chart, upgrade it once, then check our decoding against helm's own view.
fn check_decoding(c: &Cluster, helm: Helm, driver: Driver) {
    let ns = unique_ns(&format!("decode-{}", if helm == Helm::V3 { "h3" } else { "h4" }));
    c.create_namespace(&ns);
    let chart = fixture("charts/shop");
    let chart = chart.to_str().unwrap();
    // Helm writes with its own role; kubectl-drift reads with the read-only one (in `driver`).
    let helm_dsn = matches!(driver, Driver::Sql(_)).then(|| crate::common::pg().helm_dsn);
    let mut env = vec![("HELM_DRIVER", driver.name())];
    env.extend(helm_dsn.as_deref().map(|dsn| ("HELM_DRIVER_SQL_CONNECTION_STRING", dsn)));
    c.helm_with_env(helm, &["install", "shop", chart, "-n", &ns, "--set", "replicaCount=3"], &env).ok();
    c.helm_with_env(helm, &["upgrade", "shop", chart, "-n", &ns, "--set", "logLevel=debug"], &env).ok();

    let rt = runtime();
    let store = driver.open(c.client(&rt));
    let current = rt.block_on(store.get(&ns, "shop", None)).expect("read release storage");
    let release = current.release.decode().expect("decode the deployed revision");

    let manifest = c.helm_with_env(helm, &["get", "manifest", "shop", "-n", &ns], &env).ok();
    assert_eq!(release.manifest.trim_end(), manifest.trim_end(), "decoded manifest differs from helm get manifest");
    assert!(release.manifest.contains("kind: Deployment"));
    assert!(!release.manifest.contains("helm.sh/hook"), "hooks must not be in the manifest");
    assert_eq!(release.hooks.len(), 1, "the test hook is stored apart from the manifest");

    let status: Value =
        serde_json::from_str(&c.helm_with_env(helm, &["status", "shop", "-n", &ns, "-o", "json"], &env).ok()).unwrap();
    assert_eq!(Value::from(release.revision), status["version"]);
    assert_eq!(release.revision, 2);
    assert_eq!(Value::from(release.info.status.as_str()), status["info"]["status"]);
    assert_eq!(release.name, status["name"].as_str().unwrap());
    assert_eq!(release.namespace, ns);
    if let Some(meta) = status.get("chart").and_then(|c| c.get("metadata")) {
        assert_eq!(Value::from(release.chart_name()), meta["name"]);
        assert_eq!(Value::from(release.chart_version()), meta["version"]);
    }
    assert_eq!(release.chart_name(), "shop");
    assert_eq!(release.chart_version(), "1.2.0");
    assert_eq!(release.app_version(), "4.5.6");

    let values: Value =
        serde_json::from_str(&c.helm_with_env(helm, &["get", "values", "shop", "-n", &ns, "-o", "json"], &env).ok())
            .unwrap();
    assert_eq!(release.values(), values);
    assert_eq!(values, serde_json::json!({"logLevel": "debug"}));

    // The first revision is still readable, and superseded.
    let first = rt.block_on(store.get(&ns, "shop", Some(1))).unwrap();
    let first = first.release.decode().unwrap();
    assert_eq!(first.revision, 1);
    assert_eq!(first.info.status, "superseded");
    assert_eq!(first.values(), serde_json::json!({"replicaCount": 3}));
    let manifest_v1 = c.helm_with_env(helm, &["get", "manifest", "shop", "-n", &ns, "--revision", "1"], &env).ok();
    assert_eq!(first.manifest.trim_end(), manifest_v1.trim_end());

    // Listing deployed releases finds exactly this one.
    let deployed = rt.block_on(store.deployed(Some(&ns))).unwrap();
    assert_eq!(deployed.len(), 1);
    assert_eq!(deployed[0].revision, 2);

    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

#[ignore = "needs the local control plane"]
#[test]
fn decode_helm3_secret_driver() {
    let c = crate::needs_cluster!("decode_helm3_secret_driver");
    check_decoding(&c, Helm::V3, Driver::Secret);
}

#[ignore = "needs the local control plane"]
#[test]
fn decode_helm4_secret_driver() {
    let c = crate::needs_cluster!("decode_helm4_secret_driver");
    check_decoding(&c, Helm::V4, Driver::Secret);
}

/// The SQL driver, read by the read-only role (TLS, SELECT only) from what Helm wrote.
fn sql_driver() -> Driver {
    let dsn = crate::common::pg().readonly_dsn;
    Driver::select(Some("sql"), Some(&dsn), Some(std::time::Duration::from_secs(30))).expect("sql driver")
}

#[ignore = "needs the local control plane"]
#[test]
fn decode_helm3_sql_driver() {
    let c = crate::needs_cluster!("decode_helm3_sql_driver");
    check_decoding(&c, Helm::V3, sql_driver());
}

#[ignore = "needs the local control plane"]
#[test]
fn decode_helm4_sql_driver() {
    let c = crate::needs_cluster!("decode_helm4_sql_driver");
    check_decoding(&c, Helm::V4, sql_driver());
}

#[ignore = "needs the local control plane"]
#[test]
fn decode_helm3_configmap_driver() {
    let c = crate::needs_cluster!("decode_helm3_configmap_driver");
    check_decoding(&c, Helm::V3, Driver::ConfigMap);
}

#[ignore = "needs the local control plane"]
#[test]
fn decode_helm4_configmap_driver() {
    let c = crate::needs_cluster!("decode_helm4_configmap_driver");
    check_decoding(&c, Helm::V4, Driver::ConfigMap);
}

/// A storage Secret that is corrupt is reported by name through the CLI, with exit code 2.
#[ignore = "needs the local control plane"]
#[test]
fn corrupt_storage_is_an_error_naming_the_object() {
    let c = crate::needs_cluster!("corrupt_storage_is_an_error_naming_the_object");
    let ns = unique_ns("decode-corrupt");
    c.create_namespace(&ns);
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: sh.helm.release.v1.broken.v1\n  namespace: {ns}\n  labels: {{owner: helm, name: broken, status: deployed, version: \"1\"}}\ntype: helm.sh/release.v1\nstringData:\n  release: 'H4sI%%%not-base64'\n"
    );
    c.kubectl_stdin(&["apply", "-f", "-"], &secret).ok();
    let run = c.drift(&["release", "broken", "-n", &ns]);
    assert_eq!(run.code(), 2, "stdout: {} stderr: {}", run.stdout(), run.stderr());
    assert!(run.stderr().contains(&format!("Secret {ns}/sh.helm.release.v1.broken.v1")), "{}", run.stderr());
    assert!(!run.stderr().contains("panicked"));
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// Helm's storage is read in pages of 100 records (src/source/helm/objects.rs): 230 releases, three
/// pages, are each found once and checked against their own objects, on the real API server's
/// continue tokens. The records are written as Helm writes them (a Secret of type
/// `helm.sh/release.v1`, base64 of gzipped JSON, Helm's labels); every other release's ConfigMap
/// exists, so half are clean and half drifted. The API server's audit log shows the three pages.
#[ignore = "needs the local control plane"]
#[test]
fn storage_read_in_pages_finds_every_release_once() {
    let c = crate::needs_cluster!("storage_read_in_pages_finds_every_release_once");
    let ns = unique_ns("decode-pages");
    c.create_namespace(&ns);
    let n = 230;
    let mut yaml = String::new();
    for i in 0..n {
        let name = format!("p{i:03}");
        let manifest = format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\ndata:\n  k: v\n"
        );
        let record = serde_json::json!({
            "name": name, "namespace": ns, "version": 1,
            "info": {"status": "deployed", "description": "Install complete"},
            "chart": {"metadata": {"name": "pages", "version": "1.0.0"}},
            "manifest": manifest,
        });
        let encoded = kubectl_drift::source::helm::decode::encode_release(record.to_string().as_bytes());
        yaml += &format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: sh.helm.release.v1.{name}.v1\n  namespace: {ns}\n  \
             labels: {{owner: helm, name: {name}, status: deployed, version: \"1\"}}\ntype: helm.sh/release.v1\n\
             stringData:\n  release: {encoded}\n"
        );
        if i % 2 == 0 {
            yaml += &manifest;
        }
    }
    c.kubectl_stdin(&["apply", "-f", "-"], &yaml).ok();
    // As the audited user, to see the pages in the API server's audit log.
    let alone = crate::audit::one_at_a_time();
    let offset = crate::audit::log_len();
    let run = c.drift(&["release", "--all", "-n", &ns, "-o", "json", "--context", "audit"]);
    assert_eq!(run.code(), 1, "stdout: {} stderr: {}", run.stdout(), run.stderr());
    let (events, _) = crate::audit::events_since(offset);
    drop(alone);
    let pages: Vec<&str> = events
        .iter()
        .filter(|e| e["verb"] == "list" && e["objectRef"]["resource"] == "secrets" && e["objectRef"]["namespace"] == ns)
        .filter_map(|e| e["requestURI"].as_str())
        .filter(|uri| uri.contains("status%3Ddeployed"))
        .collect();
    assert_eq!(pages.len(), 3, "{pages:#?}");
    assert!(pages.iter().all(|uri| uri.contains("limit=100")), "{pages:#?}");
    assert_eq!(pages.iter().filter(|uri| uri.contains("continue=")).count(), 2, "{pages:#?}");
    let report = run.report();
    let releases = report["releases"].as_array().unwrap();
    let got: Vec<(String, String)> = releases
        .iter()
        .map(|r| (r["name"].as_str().unwrap().to_string(), r["status"].as_str().unwrap().to_string()))
        .collect();
    let want: Vec<(String, String)> =
        (0..n).map(|i| (format!("p{i:03}"), if i % 2 == 0 { "clean" } else { "drifted" }.to_string())).collect();
    assert_eq!(got, want, "{}", run.stderr());
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
