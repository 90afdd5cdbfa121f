//! Shared harness for the end-to-end tests: the real local control plane from
//! `scripts/test-env up`, real kubectl and helm, one namespace per test.
//!
//! Every test that needs the control plane is `#[ignore = "needs the local control plane"]`, so a
//! plain `cargo test` leaves it out (and says so); `scripts/test` starts the control plane and runs
//! them with `--include-ignored` and `DRIFT_E2E=1`. Run without them, or with the control plane
//! unreachable, such a test fails: it never passes by skipping.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// The tools and kubeconfig of a running test environment.
pub struct Cluster {
    pub kubeconfig: PathBuf,
    pub kubectl: PathBuf,
    pub helm3: PathBuf,
    pub helm4: PathBuf,
    pub tools_bin: PathBuf,
    /// A scratch directory for this test (helm homes, files), removed on drop.
    pub scratch: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// Which Helm major version to drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Helm {
    V3,
    V4,
}

/// The control plane for test `name`. Fails the test unless `DRIFT_E2E=1` (set by `scripts/test`,
/// which starts a private control plane): a KUBECONFIG of the user's own must never be the target.
pub fn cluster(name: &str) -> Cluster {
    assert!(
        std::env::var("DRIFT_E2E").as_deref() == Ok("1"),
        "{name} needs the local control plane: run scripts/test (it sets DRIFT_E2E=1 and starts one)"
    );
    let var = |k: &str| -> PathBuf {
        PathBuf::from(std::env::var(k).unwrap_or_else(|_| {
            panic!("DRIFT_E2E=1 but {k} is not set: run the tests through scripts/test (or eval \"$(scripts/test-env up)\")")
        }))
    };
    let kubeconfig = var("KUBECONFIG");
    let kubectl = var("KUBECTL");
    let out = Command::new(&kubectl)
        .args(["--kubeconfig"])
        .arg(&kubeconfig)
        .args(["get", "--raw", "/readyz", "--request-timeout", "10s"])
        .output()
        .expect("failed to run kubectl");
    assert!(
        out.status.success(),
        "DRIFT_E2E=1 but the control plane is not reachable: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let scratch = std::env::temp_dir().join(format!(
        "drift-e2e-{}-{}-{}",
        name,
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&scratch).unwrap();
    Cluster {
        kubeconfig,
        kubectl,
        helm3: var("HELM3"),
        helm4: var("HELM4"),
        tools_bin: var("DRIFT_TOOLS_BIN"),
        scratch,
    }
}

/// The control plane for this test (see [`cluster`]).
#[macro_export]
macro_rules! needs_cluster {
    ($name:expr) => {
        $crate::common::cluster($name)
    };
}

/// A unique namespace name for a test.
pub fn unique_ns(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}-{:x}{}", nanos % 0xfffff, N.fetch_add(1, Ordering::SeqCst))
}

/// A port on 127.0.0.1 for a server that a test starts in another process (chromedriver, an API
/// server replica, `watch --listen`), or for a port nothing should listen on.
///
/// Picked below the range Linux hands out to outgoing connections
/// (`/proc/sys/net/ipv4/ip_local_port_range`, 32768-60999 by default), as `scripts/test-env` picks
/// its own: a port inside that range that was free when picked can be taken by any outgoing
/// connection before the server binds it. Below it only a listener can hold a port, and that is
/// checked by binding it. No port is handed out twice in one test process, and the ports the
/// environment reserved (`$DRIFT_ENV_DIR/ports`, such as the registry token realm's) are skipped.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::Mutex;
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let (lo, hi) = server_port_range();
    let reserved: Vec<u16> = std::env::var("DRIFT_ENV_DIR")
        .ok()
        .and_then(|d| std::fs::read_to_string(Path::new(&d).join("ports")).ok())
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default();
    let mut given = GIVEN.lock().unwrap();
    for _ in 0..1000 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        let p = lo + (h.finish() % u64::from(hi - lo + 1)) as u16;
        if given.contains(&p) || reserved.contains(&p) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", p)).is_ok() {
            given.push(p);
            return p;
        }
    }
    panic!("no free port on 127.0.0.1 in {lo}-{hi}");
}

/// The ports below (or, when there is no room, above) the ephemeral port range.
fn server_port_range() -> (u16, u16) {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let mut it = text.split_whitespace().filter_map(|v| v.parse::<u32>().ok());
    let (lo, hi) = (it.next().unwrap_or(32768), it.next().unwrap_or(60999));
    if lo >= 12000 {
        (10000, (lo - 1) as u16)
    } else if lo >= 3024 {
        (1024, (lo - 1) as u16)
    } else if hi <= 63535 {
        ((hi + 1) as u16, 65535)
    } else {
        panic!("no port range outside the ephemeral range {lo}-{hi} is wide enough for the test servers")
    }
}

pub fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path)
}

/// Output of a finished command, with helpers that fail the test with its stderr.
pub struct Run {
    pub out: Output,
    pub what: String,
}

impl Run {
    pub fn code(&self) -> i32 {
        self.out.status.code().unwrap_or(-1)
    }
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    /// Assert success and return stdout.
    pub fn ok(&self) -> String {
        assert!(
            self.out.status.success(),
            "{} failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
            self.what,
            self.out.status,
            self.stdout(),
            self.stderr()
        );
        self.stdout()
    }
}

fn run(mut cmd: Command, what: String) -> Run {
    cmd.stdin(Stdio::null());
    let out = cmd.output().unwrap_or_else(|e| panic!("failed to start {what}: {e}"));
    Run { out, what }
}

impl Cluster {
    /// The private home (config, data, cache, plugins) of one Helm version in this test.
    pub fn helm_home(&self, helm: Helm) -> PathBuf {
        self.scratch.join(match helm {
            Helm::V3 => "helm3",
            Helm::V4 => "helm4",
        })
    }

    /// Environment every child process gets: the test kubeconfig and isolated helm homes.
    pub fn apply_env(&self, cmd: &mut Command, helm: Helm) {
        let home = self.scratch.join(match helm {
            Helm::V3 => "helm3",
            Helm::V4 => "helm4",
        });
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_PLUGINS", home.join("plugins"))
            .env_remove("HELM_DRIVER")
            .env_remove("HELM_NAMESPACE")
            .env_remove("HELM_KUBECONTEXT")
            .env_remove("HELM_PLUGIN_NAME")
            .env_remove("HELM_PLUGIN_DIR")
            .env_remove("NO_COLOR");
    }

    pub fn kubectl(&self, args: &[&str]) -> Run {
        let mut cmd = Command::new(&self.kubectl);
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        run(cmd, format!("kubectl {}", args.join(" ")))
    }

    /// A command line run with bash against the test cluster, as a user would paste a printed
    /// command: KUBECONFIG set, the tools and the binary under test on PATH (so `kubectl drift`
    /// finds it as kubectl's plugin).
    pub fn bash(&self, cmd: &str) -> std::process::Output {
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-drift")).parent().unwrap().to_path_buf();
        let path =
            format!("{}:{}:{}", bin.display(), self.tools_bin.display(), std::env::var("PATH").unwrap_or_default());
        Command::new("bash").args(["-c", cmd]).env("KUBECONFIG", &self.kubeconfig).env("PATH", &path).output().unwrap()
    }

    /// kubectl with a manifest on stdin.
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> Run {
        use std::io::Write;
        let mut cmd = Command::new(&self.kubectl);
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("failed to start kubectl");
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        Run { out, what: format!("kubectl {}", args.join(" ")) }
    }

    pub fn helm(&self, helm: Helm, args: &[&str]) -> Run {
        self.helm_with_env(helm, args, &[])
    }

    pub fn helm_with_env(&self, helm: Helm, args: &[&str], env: &[(&str, &str)]) -> Run {
        let bin = match helm {
            Helm::V3 => &self.helm3,
            Helm::V4 => &self.helm4,
        };
        let mut cmd = Command::new(bin);
        self.apply_env(&mut cmd, helm);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(args);
        run(cmd, format!("helm ({helm:?}) {}", args.join(" ")))
    }

    /// Run the kubectl-drift binary under test.
    pub fn drift(&self, args: &[&str]) -> Run {
        self.drift_with_env(args, &[])
    }

    pub fn drift_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-drift"));
        self.apply_env(&mut cmd, Helm::V4);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(args);
        run(cmd, format!("kubectl-drift {}", args.join(" ")))
    }

    /// A kubeconfig for a ServiceAccount token, so a test can act as a user with few rights.
    pub fn token_kubeconfig(&self, ns: &str, sa: &str) -> PathBuf {
        let token = self.kubectl(&["-n", ns, "create", "token", sa]).ok();
        let admin = |jsonpath: &str| {
            let jsonpath = format!("jsonpath={{.clusters[0].cluster.{jsonpath}}}");
            self.kubectl(&["config", "view", "--raw", "--minify", "--context", "admin", "-o", &jsonpath]).ok()
        };
        let (server, ca) = (admin("server"), admin("certificate-authority-data"));
        let path = self.scratch.join(format!("{sa}.kubeconfig"));
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster: {{server: '{server}', certificate-authority-data: '{ca}'}}\n\
                 users:\n- name: {sa}\n  user: {{token: '{}'}}\ncontexts:\n- name: {sa}\n  context: {{cluster: local, user: {sa}, namespace: {ns}}}\ncurrent-context: {sa}\n",
                token.trim()
            ),
        )
        .unwrap();
        path
    }

    pub fn create_namespace(&self, ns: &str) {
        self.kubectl(&["create", "namespace", ns]).ok();
    }

    /// A kube client for the admin context, for tests that call the library directly.
    pub fn client(&self, rt: &tokio::runtime::Runtime) -> kube::Client {
        rt.block_on(async {
            let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).unwrap();
            let opts = kube::config::KubeConfigOptions { context: Some("admin".into()), ..Default::default() };
            let config = kube::Config::from_custom_kubeconfig(kc, &opts).await.unwrap();
            kube::Client::try_from(config).unwrap()
        })
    }
}

impl Cluster {
    /// `bash -c CMD` as a person would run a printed command: `helm` (the version under test) and
    /// `kubectl` first on PATH, the test kubeconfig and Helm homes, plus `env`.
    pub fn shell(&self, helm: Helm, cmd: &str, env: &[(&str, &str)]) -> Run {
        let bin = self.scratch.join(format!("bin-{helm:?}"));
        if !bin.exists() {
            std::fs::create_dir_all(&bin).unwrap();
            let helm_bin = match helm {
                Helm::V3 => &self.helm3,
                Helm::V4 => &self.helm4,
            };
            std::os::unix::fs::symlink(helm_bin, bin.join("helm")).unwrap();
        }
        let path =
            format!("{}:{}:{}", bin.display(), self.tools_bin.display(), std::env::var("PATH").unwrap_or_default());
        let mut p = Command::new("bash");
        p.arg("-c").arg(cmd).env("PATH", &path);
        self.apply_env(&mut p, helm);
        for (k, v) in env {
            p.env(k, v);
        }
        run(p, cmd.to_string())
    }
}

/// The report in our CLI's `-o json` or `-o yaml` output (`release`, `manifests`, `orphans`,
/// `versions`) of a run on one cluster, after checking the shape every such output has
/// (schemaVersion 2, docs/output.md "Clusters"): `{"schemaVersion": 2, "clusters": [{"cluster":
/// NAME, "report": {...}}]}` with exactly one entry, no `error`, and a report of schemaVersion 2
/// that names the same cluster. Panics, with the output, when the shape is not that.
pub fn report_of(stdout: &str) -> serde_json::Value {
    report_in(stdout, "")
}

impl Run {
    /// [`report_of`] this run's stdout; a failure also shows the command, its exit code and stderr.
    pub fn report(&self) -> serde_json::Value {
        report_in(&self.stdout(), &format!("\n{} (exit {})\nstderr:\n{}", self.what, self.code(), self.stderr()))
    }
}

fn report_in(stdout: &str, context: &str) -> serde_json::Value {
    // `-o json` starts with `{`; anything else is read as YAML (`-o yaml`).
    let parsed: Result<serde_json::Value, String> = if stdout.trim_start().starts_with('{') {
        serde_json::from_str(stdout).map_err(|e| format!("not JSON ({e})"))
    } else {
        serde_saphyr::from_str(stdout).map_err(|e| format!("neither JSON nor YAML ({e})"))
    };
    let mut output = parsed.unwrap_or_else(|e| panic!("{e}:\n{stdout}{context}"));
    assert_eq!(output["schemaVersion"], 2, "the output's schemaVersion:\n{stdout}{context}");
    let clusters = output["clusters"].as_array_mut().unwrap_or_else(|| panic!("no clusters list:\n{stdout}{context}"));
    assert_eq!(clusters.len(), 1, "one cluster expected:\n{stdout}{context}");
    let mut entry = clusters.remove(0);
    assert!(entry.get("error").is_none(), "the cluster could not be read:\n{stdout}{context}");
    let cluster = entry["cluster"]
        .as_str()
        .unwrap_or_else(|| panic!("a cluster without its name:\n{stdout}{context}"))
        .to_string();
    assert!(!cluster.is_empty(), "an empty cluster name:\n{stdout}{context}");
    let report = entry["report"].take();
    assert!(report.is_object(), "no report:\n{stdout}{context}");
    assert_eq!(
        report["cluster"],
        cluster.as_str(),
        "the report names another cluster than its entry:\n{stdout}{context}"
    );
    assert_eq!(report["schemaVersion"], 2, "the report's schemaVersion:\n{stdout}{context}");
    report
}

/// The reconcile commands of the first release (or file) of a JSON report, in order.
pub fn reconcile_commands(report: &serde_json::Value) -> Vec<String> {
    let first = if report["releases"].is_array() { &report["releases"][0] } else { &report["files"][0] };
    first["reconcile"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// The PostgreSQL of the test environment (`scripts/test-env up`), for Helm's SQL driver.
pub struct Pg {
    /// Role `helm`, owner of Helm's tables (Helm itself connects with it).
    pub helm_dsn: String,
    /// Role `drift_ro`: connect over TLS only, SELECT, BYPASSRLS.
    pub readonly_dsn: String,
    /// Role `drift_norls`: like drift_ro without BYPASSRLS (Helm's row-level security hides rows).
    pub norls_dsn: String,
    /// The CA that signed the server certificate.
    pub ca: PathBuf,
}

impl Pg {
    /// The password inside a connection string of the test environment.
    pub fn password(dsn: &str) -> String {
        let userinfo = dsn.trim_start_matches("postgres://").split('@').next().unwrap_or("");
        userinfo.split_once(':').map(|(_, pw)| pw.to_string()).expect("test DSNs carry a password")
    }
}

/// The PostgreSQL connection strings exported by `scripts/test-env env` (panics when missing:
/// only call this after `needs_cluster!`).
pub fn pg() -> Pg {
    let var = |k: &str| {
        std::env::var(k).unwrap_or_else(|_| {
            panic!("DRIFT_E2E=1 but {k} is not set: scripts/test-env up starts PostgreSQL and exports it")
        })
    };
    Pg {
        helm_dsn: var("DRIFT_PG_HELM_DSN"),
        readonly_dsn: var("DRIFT_PG_READONLY_DSN"),
        norls_dsn: var("DRIFT_PG_NORLS_DSN"),
        ca: PathBuf::from(var("DRIFT_PG_CA")),
    }
}

impl Cluster {
    /// A chart `name` 0.1.0 in the test's scratch folder with one template, `template`.
    pub fn one_template_chart(&self, name: &str, template: &str) -> PathBuf {
        let chart = self.scratch.join(name);
        std::fs::create_dir_all(chart.join("templates")).unwrap();
        std::fs::write(chart.join("Chart.yaml"), format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n")).unwrap();
        std::fs::write(chart.join("templates/main.yaml"), template).unwrap();
        chart
    }
}
