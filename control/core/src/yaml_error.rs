//! The messages of errors in YAML files, each said once.

/// serde_norway starts the message of an error inside a document with the path of the value it
/// is about (`faults[0]: unknown field ...`). The files' errors name that path already
/// (serde_path_to_error, down to the field), so the message drops it: otherwise they read
/// `faults[0].los: faults[0]: unknown field`.
pub fn message(msg: &str) -> &str {
    match msg.split_once(": ") {
        Some((head, rest)) if !head.is_empty() && !head.contains([' ', '`', '"', '\'']) => rest,
        _ => msg,
    }
}

/// `message` without serde_norway's ` at line L column C` (for errors that give the line
/// apart).
pub fn without_location(msg: &str) -> &str {
    let msg = message(msg);
    match msg.rfind(" at line ") {
        Some(i) if msg[i..].contains(" column ") => &msg[..i],
        _ => msg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_prefix_goes_and_the_rest_stays() {
        assert_eq!(
            message("faults[0]: unknown field `los`, expected `loss` at line 2 column 5"),
            "unknown field `los`, expected `loss` at line 2 column 5"
        );
        assert_eq!(
            message("invalid type: string \"x\", expected u64"),
            "invalid type: string \"x\", expected u64"
        );
        assert_eq!(
            without_location("pipeline: unknown field `alfa` at line 3 column 3"),
            "unknown field `alfa`"
        );
    }
}
