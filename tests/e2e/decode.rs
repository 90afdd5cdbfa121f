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
