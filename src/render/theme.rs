//! The one place colours are chosen. Every style returns plain text when colour is off, so the
//! decision (made once, in `context`) is never re-made by a renderer.

use owo_colors::OwoColorize;

/// Colours for every renderer.
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    pub fn new(color: bool) -> Theme {
        Theme { color }
    }
    pub fn plain() -> Theme {
        Theme { color: false }
    }
    fn paint(&self, s: &str, f: impl Fn(&str) -> String) -> String {
        if self.color { f(s) } else { s.to_string() }
    }
    /// Headers: release and file names.
    pub fn heading(&self, s: &str) -> String {
        self.paint(s, |s| s.bold().to_string())
    }
    /// Object titles.
    pub fn object(&self, s: &str) -> String {
        self.paint(s, |s| s.cyan().bold().to_string())
    }
    pub fn clean(&self, s: &str) -> String {
        self.paint(s, |s| s.green().bold().to_string())
    }
    pub fn drifted(&self, s: &str) -> String {
        self.paint(s, |s| s.yellow().bold().to_string())
    }
    pub fn error(&self, s: &str) -> String {
        self.paint(s, |s| s.red().bold().to_string())
    }
    /// Desired values (what should be), and removed lines in diffs.
    pub fn desired(&self, s: &str) -> String {
        self.paint(s, |s| s.red().to_string())
    }
    /// Live values (what is), and added lines in diffs.
    pub fn live(&self, s: &str) -> String {
        self.paint(s, |s| s.green().to_string())
    }
    /// Attribution and other secondary text.
    pub fn dim(&self, s: &str) -> String {
        self.paint(s, |s| s.dimmed().to_string())
    }
    /// Reconcile commands.
    pub fn command(&self, s: &str) -> String {
        self.paint(s, |s| s.blue().to_string())
    }
}
