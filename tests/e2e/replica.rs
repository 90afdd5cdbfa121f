//! A second kube-apiserver for the test control plane, which a test may kill.
//!
//! Killing the environment's own API server would break every test running in parallel. A replica
//! is a second `kube-apiserver` process against the same etcd (the way an HA control plane runs
//! several), started with the first one's own flags (read from its command line, so whatever
//! `scripts/test-env` sets, certificates, tokens and authorization included, is the same) on its own
//! loopback port, with its own cert dir and audit log. It serves the same objects, so a test points
//! the tool at the replica's kubeconfig, then `kill()`s it (SIGKILL, as a crash or an OOM kill would)
//! and `restart()`s it on the same port.
//!
//! ```ignore
//! let c = needs_cluster!("my_test");
//! let mut api = Replica::start(&c);            // ready when it returns
//! c.drift(&["--kubeconfig", api.kubeconfig_str(), "release", ...]);
//! api.kill();                                   // kill -9; waits until the process is gone
//! api.restart();                                // same port, same kubeconfig; waits for /readyz
//! ```
//!
//! Its pid is also written to `$DRIFT_ENV_DIR/pids/`, so `scripts/test-env down` stops a replica a
//! crashed test left behind; `Drop` kills it and removes that file.

#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Cluster;

pub struct Replica {
    bin: PathBuf,
    args: Vec<String>,
    port: u16,
    dir: PathBuf,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
    pid_file: PathBuf,
    child: Option<Child>,
}

/// The value of `--flag` in an argument list written as `--flag value` or `--flag=value`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let eq = format!("{flag}=");
    args.iter().enumerate().find_map(
        |(i, a)| {
            if a == flag { args.get(i + 1).map(String::as_str) } else { a.strip_prefix(&eq) }
        },
    )
}

/// Replace (or add) `--flag value` in an argument list.
fn set_flag(args: &mut Vec<String>, flag: &str, value: &str) {
    let eq = format!("{flag}=");
    if let Some(i) = args.iter().position(|a| a == flag) {
        args[i + 1] = value.to_string();
    } else if let Some(i) = args.iter().position(|a| a.starts_with(&eq)) {
        args[i] = format!("{eq}{value}");
    } else {
        args.push(flag.to_string());
        args.push(value.to_string());
    }
}

impl Replica {
    /// Start a replica of the environment's API server and wait until it is ready.
    pub fn start(c: &Cluster) -> Replica {
        Replica::start_with_gates(c, None)
    }

    /// A replica with feature gates of its own (`Name=value,...`) added to the first one's.
    pub fn start_with_gates(c: &Cluster, gates: Option<&str>) -> Replica {
        let env_dir = PathBuf::from(std::env::var("DRIFT_ENV_DIR").expect(
            "DRIFT_ENV_DIR is not set: the API server replica needs the scripts/test-env state (eval \"$(scripts/test-env up)\")",
        ));
        let pid = std::fs::read_to_string(env_dir.join("pids/kube-apiserver.pid"))
            .unwrap_or_else(|e| panic!("no kube-apiserver pid file in {}: {e}", env_dir.display()));
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", pid.trim()))
            .unwrap_or_else(|e| panic!("cannot read the command line of kube-apiserver (pid {}): {e}", pid.trim()));
        let mut argv: Vec<String> =
            cmdline.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into()).collect();
        assert!(!argv.is_empty(), "empty kube-apiserver command line (pid {})", pid.trim());
        let bin = PathBuf::from(argv.remove(0));
        let mut args = argv;
        let first_port = flag_value(&args, "--secure-port").expect("kube-apiserver has no --secure-port").to_string();
        assert!(flag_value(&args, "--etcd-servers").is_some(), "kube-apiserver has no --etcd-servers: {args:?}");

        let port = crate::common::free_port();
        let dir = c.scratch.join(format!("apiserver-replica-{port}"));
        std::fs::create_dir_all(dir.join("cert")).unwrap();
        set_flag(&mut args, "--secure-port", &port.to_string());
        set_flag(&mut args, "--cert-dir", dir.join("cert").to_str().unwrap());
        if flag_value(&args, "--audit-log-path").is_some() {
            set_flag(&mut args, "--audit-log-path", dir.join("audit.log").to_str().unwrap());
        }
        // The first API server keeps the `kubernetes` Service's endpoints; two servers on 127.0.0.1
        // with different ports would rewrite them in turn.
        set_flag(&mut args, "--endpoint-reconciler-type", "none");
        if let Some(gates) = gates {
            let all = match flag_value(&args, "--feature-gates") {
                Some(first) if !first.is_empty() => format!("{first},{gates}"),
                _ => gates.to_string(),
            };
            set_flag(&mut args, "--feature-gates", &all);
        }

        let kubeconfig = dir.join("kubeconfig");
        let text = std::fs::read_to_string(&c.kubeconfig).unwrap();
        let from = format!("server: https://127.0.0.1:{first_port}");
        assert!(text.contains(&from), "the test kubeconfig has no '{from}'");
        std::fs::write(&kubeconfig, text.replace(&from, &format!("server: https://127.0.0.1:{port}"))).unwrap();

        let mut r = Replica {
            bin,
            args,
            port,
            pid_file: env_dir.join(format!("pids/kube-apiserver-replica-{port}.pid")),
            dir,
            kubeconfig,
            kubectl: c.kubectl.clone(),
            child: None,
        };
        r.restart();
        r
    }

    /// The kubeconfig of the replica (contexts admin, readonly and audit, like the environment's).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn kubeconfig_str(&self) -> &str {
        self.kubeconfig.to_str().unwrap()
    }

    /// The replica's own audit log (the environment's policy: the drift-audit user's requests).
    pub fn audit_log(&self) -> PathBuf {
        self.dir.join("audit.log")
    }

    /// `https://127.0.0.1:PORT`.
    pub fn server(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The replica's log (stdout and stderr of every start, appended).
    pub fn log(&self) -> PathBuf {
        self.dir.join("kube-apiserver.log")
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// SIGKILL the replica and wait until it is gone (its port refuses connections then).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(&self.pid_file);
    }

    /// Start the replica (again, on the same port) and wait up to 120 s for its /readyz.
    pub fn restart(&mut self) {
        self.kill();
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log()).unwrap();
        let child = Command::new(&self.bin)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.bin.display()));
        std::fs::write(&self.pid_file, child.id().to_string()).unwrap();
        self.child = Some(child);
        self.wait_ready(Duration::from_secs(120));
    }

    /// Poll /readyz (as the admin user) until it answers ok; on timeout, or if the replica exits,
    /// kill it and fail saying which of the two (with the exit status), the last /readyz answer
    /// and the end of its log.
    pub fn wait_ready(&mut self, limit: Duration) {
        let started = Instant::now();
        let deadline = started + limit;
        loop {
            let out = Command::new(&self.kubectl)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(["get", "--raw", "/readyz?verbose", "--request-timeout", "5s"])
                .stdin(Stdio::null())
                .output()
                .unwrap();
            if out.status.success() {
                return;
            }
            let exited = match self.child.as_mut().map(|c| c.try_wait()) {
                Some(Ok(Some(status))) => Some(format!("exited ({status})")),
                Some(Ok(None)) => None,
                Some(Err(e)) => Some(format!("cannot be waited for: {e}")),
                None => Some("was killed (by the test)".to_string()),
            };
            if exited.is_some() || Instant::now() > deadline {
                let why = exited.unwrap_or_else(|| format!("still running, not ready after {limit:?}"));
                let log = std::fs::read_to_string(self.log()).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                self.kill();
                panic!(
                    "the API server replica on port {} did not become ready: it {why}, {:.1?} after this start\n\
                     last /readyz: {}{}\nits log's end:\n{}",
                    self.port,
                    started.elapsed(),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}
