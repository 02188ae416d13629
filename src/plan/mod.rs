//! Plan reading: from a workbook or JSON file to a checked [`model::Plan`].
//!
//! [`input`] reads the file into raw tables of located cells, using [`layout`]'s sheet, column
//! and key names with their aliases and [`location`]'s A1 references; [`validate`] applies every
//! rule of the plan format and yields the [`model`] or a [`diagnostic::Report`]. [`sample`] is
//! the embedded sample plan.

pub mod diagnostic;
pub mod input;
pub mod layout;
pub mod location;
pub mod model;
pub mod sample;
pub mod validate;
