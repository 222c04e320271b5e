//! The name of every probe kind: the one enum specs, results and the
//! database name a probe by, made from the list of kinds in the crate's
//! root (`for_each_kind!`), whose one line per kind is a kind's
//! registration in core. Kept alone in this file, below every kind, so a
//! kind's own code names its kind without importing the registry that
//! names every kind's descriptor.

use serde::{Deserialize, Serialize};

/// The enum of every kind [`for_each_kind`] lists.
macro_rules! kind_enum {
    (
        in probe { $( $(#[doc = $pdoc:literal])* $p:ident => $pdesc:ident, )* }
        $( $(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $k:ident => $m:ident :: $desc:ident, )*
    ) => {
        /// Which probe: the name of a probe kind in results, specs and the
        /// database (serialized as its [`name`](ProbeKind::name)).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum ProbeKind {
            $( $(#[doc = $pdoc])* $p, )*
            $( $(#[doc = $doc])* $(#[cfg($cfg)])? $k, )*
        }
    };
}

for_each_kind!(kind_enum);
