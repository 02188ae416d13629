//! [`Text`]: the strings of a check, shared. A cluster's results repeat the same few values
//! (check ids, NIC names, severities, planned and read-back values, most messages) hundreds of
//! thousands of times; kept as one allocation each, they took most of ingest's memory and much
//! of its time. Short strings are interned per thread: each distinct value is allocated once
//! per reading thread, and every check that has it points at it.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::hash::Hasher;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Serialize, Serializer};

/// Strings longer than this are rarely repeated (a message naming a value of its own): they are
/// allocated as they come, and kept out of the table.
const INTERN_MAX_LEN: usize = 96;

/// Distinct strings a thread's table holds, at most: past that, new values are allocated as
/// they come, so the table cannot grow with input made of ever new strings.
const INTERN_MAX_ENTRIES: usize = 1 << 16;

thread_local! {
    static TABLE: RefCell<HashSet<Arc<str>, Seeded>> =
        RefCell::new(HashSet::with_hasher(Seeded::default()));
}

/// The tables' hash: short strings are hashed for every check field read, and SipHash took a
/// tenth of ingest. foldhash's fast hash, its seed drawn per table, so that which strings
/// collide cannot be known in advance.
pub(super) type Seeded = foldhash::fast::RandomState;

/// An immutable, cheaply cloned string that compares, prints and serializes as its text.
#[derive(Clone, Eq, PartialOrd, Ord, Default)]
pub struct Text(Option<Arc<str>>);

impl std::hash::Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        // Shared text is the same allocation: no need to compare the bytes.
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
            (a, b) => a == b,
        }
    }
}

impl Text {
    /// The text, shared with every other `Text` of the same value made on this thread while
    /// the table has room.
    pub fn new(s: &str) -> Text {
        if s.is_empty() {
            return Text(None);
        }
        if s.len() > INTERN_MAX_LEN {
            return Text(Some(Arc::from(s)));
        }
        TABLE.with(|table| {
            let mut table = table.borrow_mut();
            if let Some(shared) = table.get(s) {
                return Text(Some(Arc::clone(shared)));
            }
            let shared: Arc<str> = Arc::from(s);
            if table.len() < INTERN_MAX_ENTRIES {
                table.insert(Arc::clone(&shared));
            }
            Text(Some(shared))
        })
    }

    /// The text as a `&str`.
    pub fn as_str(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::new(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::new(&s)
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Text {
        Text::new(s)
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        t.as_str().to_string()
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<Text> for str {
    fn eq(&self, other: &Text) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Text> for &str {
    fn eq(&self, other: &Text) -> bool {
        *self == other.as_str()
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_short_texts_share_one_allocation_and_long_ones_do_not() {
        let (a, b) = (Text::new("4200"), Text::new(&String::from("4200")));
        assert_eq!(a, b);
        assert!(matches!((&a.0, &b.0), (Some(x), Some(y)) if Arc::ptr_eq(x, y)));
        let long = "x".repeat(INTERN_MAX_LEN + 1);
        let (c, d) = (Text::new(&long), Text::new(&long));
        assert_eq!(c, d);
        assert!(matches!((&c.0, &d.0), (Some(x), Some(y)) if !Arc::ptr_eq(x, y)));
        assert_eq!(Text::new(""), Text::default());
        assert_eq!(Text::new("mtu").to_string(), "mtu");
        assert_eq!(serde_json::to_string(&a).unwrap(), r#""4200""#);
    }
}
