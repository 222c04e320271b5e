//! The toolkit every report is drawn with, below the probes so that a
//! kind's own tables (in its probe folder) use the same pieces as the
//! shared ones: the table model a renderer prints as text, Markdown, CSV,
//! JSON or HTML ([`sheet`]), the rows a table is made of and the figures
//! they pick from a stored cell ([`rows`]), and the number formatting
//! every table shares ([`number`]).
//!
//! It names no probe kind's own code and nothing of the assembly: which
//! tables a run gets, in which order, and the renderers that put them on
//! a page are `report`'s (above the probes), which asks each kind's
//! registration (`probe::REGISTRY`) for its parts.

pub mod number;
pub mod rows;
pub mod safe;
pub mod sheet;
