//! Running a helper program that reads and renders (`kubectl kustomize`, `helm template`): its
//! stdout and stderr read on threads of their own, so a full pipe never stalls it, and the
//! program killed at a deadline. The one way the source layer runs another program.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Why a helper program gave no result.
#[derive(Debug)]
pub enum ChildError {
    /// The program is not there (`ErrorKind::NotFound` from spawning it).
    NotFound,
    /// It could not be started or waited for.
    Spawn(String),
    /// It was still running at the deadline (and was killed).
    TimedOut,
}

/// A finished program: its exit status and everything it wrote.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Run `cmd` (stdin empty, stdout and stderr captured) until it exits or `deadline` passes.
pub fn run(cmd: &mut Command, deadline: Option<Instant>) -> Result<Finished, ChildError> {
    let mut child =
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ChildError::NotFound,
            _ => ChildError::Spawn(e.to_string()),
        })?;
    let reader = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = reader(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = reader(Box::new(child.stderr.take().expect("stderr is piped")));
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ChildError::Spawn(e.to_string()));
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ChildError::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Finished { status, stdout: stdout.join().unwrap_or_default(), stderr: stderr.join().unwrap_or_default() })
}

/// What a program wrote to stderr, on one line: its non-empty lines, trimmed, joined by spaces.
pub fn one_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_exit_status_and_a_missing_program() {
        let done = run(Command::new("sh").args(["-c", "echo out; echo '  err  ' >&2; echo two >&2; exit 3"]), None)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(done.stdout, b"out\n");
        assert_eq!(done.status.code(), Some(3));
        assert_eq!(one_line(&done.stderr), "err two");
        assert!(matches!(run(&mut Command::new("/nonexistent/program"), None), Err(ChildError::NotFound)));
    }

    #[test]
    fn a_program_past_its_deadline_is_killed() {
        let start = Instant::now();
        let r = run(Command::new("sleep").arg("30"), Some(Instant::now() + Duration::from_millis(200)));
        assert!(matches!(r, Err(ChildError::TimedOut)));
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn output_larger_than_a_pipe_does_not_stall_it() {
        let done =
            run(Command::new("sh").args(["-c", "head -c 1000000 /dev/zero; head -c 300000 /dev/zero >&2"]), None)
                .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!((done.stdout.len(), done.stderr.len()), (1_000_000, 300_000));
    }
}
