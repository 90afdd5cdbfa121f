//! Shell completion answers: the candidates and the directive, in Cobra's terms (what kubectl
//! and Helm relay to the shell). The app computes them; `render::completion` writes them.

/// Cobra's completion directives, as kubectl and Helm pass them to the shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directive {
    /// The shell may fall back to file names.
    Default = 0,
    /// No file names: only the candidates given.
    NoFileComp = 4,
}

/// One completion candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub value: String,
    /// Shown next to the value by shells that show descriptions (zsh, fish); may be empty.
    pub description: String,
}

impl Candidate {
    pub(crate) fn new(value: impl Into<String>, description: impl Into<String>) -> Candidate {
        let description: String = description.into();
        let description = description.lines().next().unwrap_or("").trim().to_string();
        Candidate { value: value.into(), description }
    }
}

/// The answer: candidates and what the shell should do besides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub candidates: Vec<Candidate>,
    pub directive: Directive,
}
