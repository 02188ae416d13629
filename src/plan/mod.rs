//! Plan reading: from a workbook or JSON file to a checked [`model::Plan`].
//!
//! [`input`] reads the file into raw tables of located cells, using [`layout`]'s sheet, column
//! and key names with their aliases and [`location`]'s A1 references; [`validate`] applies every
//! rule of the plan format and yields the [`model`] or a [`diagnostic::Report`]. [`sample`] is
//! the embedded sample plan.

pub(crate) mod diagnostic;
pub(crate) mod input;
pub(crate) mod layout;
pub(crate) mod location;
pub(crate) mod model;
pub(crate) mod sample;
pub(crate) mod validate;
