//! Quoting words for bash: the reconcile commands and the orphans cleanup script quote every
//! value they write with these. Pure string functions.

/// Quote a word for bash: as it is when it holds only characters the shell takes literally,
/// else [`shell_quote_always`].
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c)) {
        return s.to_string();
    }
    shell_quote_always(s)
}

/// Quote for bash in single quotes, with embedded ones closed and escaped (the one quoting rule;
/// cleanup scripts quote every word this way).
pub fn shell_quote_always(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("shop"), "shop");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(r#"{"a":1}"#), r#"'{"a":1}'"#);
    }
}
