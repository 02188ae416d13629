//! What the part walks read XML with: attributes as calamine reads them, numbers, and A1 cell
//! references within Excel's last cell, `XFD1048576`.

use std::borrow::Cow;

use quick_xml::events::BytesStart;

/// Excel's last row and column (1-based): `XFD1048576`.
const LAST_ROW: u64 = 1_048_576;
const LAST_COL: u64 = 16_384;

pub(super) fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}

/// An attribute's raw value, as text.
pub(super) fn attr<'e>(e: &'e BytesStart<'_>, key: &str) -> Option<Cow<'e, str>> {
    e.attributes()
        .with_checks(false)
        .flatten()
        .find(|a| a.key.as_ref() == key)
        .map(|a| a.value)
}

/// An attribute value with the five XML entities replaced (names in messages).
pub(super) fn unescape_attr(value: &str) -> String {
    quick_xml::escape::unescape(value)
        .map_or_else(|_| value.to_string(), std::borrow::Cow::into_owned)
}

/// The shared string a `t="s"` cell's `<v>` text names, as calamine 0.38 reads it
/// (`atoi_simd::parse(..).unwrap_or(0)` in its cells reader): empty text is an empty cell, and
/// text that is not a `usize` in digits (a sign, a space, a letter, too many digits) is not an
/// error but string 0, which calamine then copies into the cell like any other.
pub(super) fn shared_index(text: &str) -> Option<usize> {
    if text.is_empty() {
        return None;
    }
    let index = text.bytes().try_fold(0usize, |n, b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(usize::from(b - b'0'))
        } else {
            None
        }
    });
    Some(index.unwrap_or(0))
}

/// A decimal number made of digits only (surrounding spaces allowed), saturating.
pub(super) fn digits(text: &str) -> Option<u64> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

/// A row number `1`–`1048576`, 0-based.
pub(super) fn parse_row(text: &str) -> Option<u64> {
    (1..=7)
        .contains(&text.len())
        .then(|| digits(text))
        .flatten()
        .filter(|r| (1..=LAST_ROW).contains(r))
        .map(|r| r - 1)
}

/// A cell reference `[A-Z]{1,3}[0-9]{1,7}` within `XFD1048576`, 0-based (row, column).
pub(super) fn parse_cell(text: &str) -> Option<(u64, u64)> {
    let letters = text.bytes().take_while(u8::is_ascii_uppercase).count();
    if !(1..=3).contains(&letters) {
        return None;
    }
    let col = text
        .bytes()
        .take(letters)
        .fold(0u64, |n, c| n * 26 + u64::from(c - b'A') + 1);
    let row = parse_row(&text[letters..])?;
    (col <= LAST_COL).then_some((row, col - 1))
}

/// `A1` or `A1:B2`, its first cell not after its last.
pub(super) fn parse_range(text: &str) -> Option<((u64, u64), (u64, u64))> {
    let (first, last) = text.split_once(':').unwrap_or((text, text));
    let (first, last) = (parse_cell(first)?, parse_cell(last)?);
    (first.0 <= last.0 && first.1 <= last.1).then_some((first, last))
}

/// A 0-based position in A1 style (columns past `XFD` continue the letters).
pub(super) fn cell_name(row: u64, col: u64) -> String {
    let mut letters = Vec::new();
    let mut n = col.saturating_add(1);
    while n > 0 {
        letters.push(char::from(b'A' + ((n - 1) % 26) as u8));
        n = (n - 1) / 26;
    }
    letters.iter().rev().collect::<String>() + &row.saturating_add(1).to_string()
}

/// The refusal of a cell reference that is not one.
pub(super) fn malformed(label: &str, reference: &str, element: &str) -> String {
    let reference: String = reference.chars().take(40).collect();
    format!(
        "{label}: malformed cell reference `{reference}` in <{}>: a reference is a column A to \
         XFD and a row 1 to 1048576, like `B7`",
        element
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        assert_eq!(parse_cell("A1"), Some((0, 0)));
        assert_eq!(parse_cell("XFD1048576"), Some((1_048_575, 16_383)));
        for bad in [
            "XFE1",
            "A1048577",
            "A0",
            "1A",
            "A99999999999",
            "a1",
            "AAAA1",
            "A",
            "",
        ] {
            assert_eq!(parse_cell(bad), None, "{bad}");
        }
        assert_eq!(parse_range("B2:A1"), None);
        assert_eq!(parse_range("A1"), Some(((0, 0), (0, 0))));
        assert_eq!(cell_name(1_048_575, 16_383), "XFD1048576");
    }
}
