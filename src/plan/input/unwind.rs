//! Containing a reader's panic. calamine, which reads the workbooks, panics on some damaged
//! files (an `assert!` or a slice index in its `.xls` compound-file code, found by
//! `tests/fuzz.rs`) where it should return an error. No input may make roce-gen panic, so its
//! calls run inside [`contain`]: a panic there becomes an error that says the file is damaged,
//! and the panic message is kept out of the terminal.

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use anyhow::{Result, anyhow};

thread_local! {
    /// While set, this thread is inside [`contain`]: a panic's message is kept here, not
    /// printed.
    static CAUGHT: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

/// Installs, once, the panic hook that stays quiet inside [`contain`] and is the default
/// elsewhere.
fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let quiet = CAUGHT.with(|c| {
                let mut c = c.borrow_mut();
                match c.as_mut() {
                    Some(slot) => {
                        let place = info
                            .location()
                            .map(|l| format!(" at {}:{}", l.file(), l.line()))
                            .unwrap_or_default();
                        let what = info
                            .payload()
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_string())
                            .or_else(|| info.payload().downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        *slot = Some(format!("{what}{place}"));
                        true
                    }
                    None => false,
                }
            });
            if !quiet {
                default(info);
            }
        }));
    });
}

/// Runs `f`; a panic inside it becomes an error saying `what` stopped on damaged data.
pub(crate) fn contain<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    install();
    CAUGHT.with(|c| *c.borrow_mut() = Some(None));
    let outcome = panic::catch_unwind(AssertUnwindSafe(f));
    let message = CAUGHT.with(|c| c.borrow_mut().take()).flatten();
    outcome.unwrap_or_else(|_| {
        Err(anyhow!(
            "{what} stopped on damaged data ({}); the file is damaged: save it again from \
             Excel or LibreOffice",
            message.unwrap_or_else(|| "no message".into())
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_and_the_next_call_works() {
        let err = contain::<()>("the reader", || panic!("boom")).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("the reader stopped on damaged data (boom at "),
            "{text}"
        );
        assert_eq!(contain("the reader", || Ok(7)).unwrap(), 7);
    }
}
