//! The [`ContractError`] that names what differs, matching a name by its suffix, and the closest
//! name for a typo.

/// Why a program and the contract disagree. Every variant names the file and the entity, and
/// where a name is missing, the closest name the program has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    #[error("{file}: {detail}")]
    Format { file: String, detail: String },
    #[error("{file}: no {what} `{name}`{}", hint(.closest))]
    Missing {
        file: String,
        what: &'static str,
        name: String,
        closest: Option<String>,
    },
    #[error("{file}: {what} `{name}` is ambiguous: {matches:?}")]
    Ambiguous {
        file: String,
        what: &'static str,
        name: String,
        matches: Vec<String>,
    },
    #[error("{file}: {entity}: {detail}")]
    Differs {
        file: String,
        entity: String,
        detail: String,
    },
}

fn hint(closest: &Option<String>) -> String {
    closest
        .as_ref()
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// The candidate closest to `name` (compared on their last dotted component), if any is close
/// enough to be a likely typo or rename.
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    fn last(s: &str) -> &str {
        s.rsplit('.').next().unwrap_or(s)
    }
    candidates
        .into_iter()
        .map(|c| {
            (
                strsim::normalized_damerau_levenshtein(last(name), last(c)),
                c,
            )
        })
        .filter(|(score, _)| *score >= 0.5)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.to_string())
}

/// The one item whose name is `name` or ends with `.name`.
pub(crate) fn by_suffix<'a, T>(
    items: &'a [T],
    name_of: impl Fn(&T) -> &str,
    name: &str,
    file: &str,
    what: &'static str,
) -> Result<&'a T, ContractError> {
    let dotted = format!(".{name}");
    let hits: Vec<&T> = items
        .iter()
        .filter(|t| name_of(t) == name || name_of(t).ends_with(&dotted))
        .collect();
    match hits.as_slice() {
        [one] => Ok(one),
        [] => Err(ContractError::Missing {
            file: file.into(),
            what,
            name: name.into(),
            closest: closest(name, items.iter().map(&name_of)),
        }),
        many => Err(ContractError::Ambiguous {
            file: file.into(),
            what,
            name: name.into(),
            matches: many.iter().map(|t| name_of(t).to_string()).collect(),
        }),
    }
}
